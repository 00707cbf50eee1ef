"""The core on the CUDA backend (mbgpu.core.device_division) against the core on the host: the same
accepted states and log likelihoods within 1e-8 relative at every sample; single precision close."""
import numpy as np
import pytest

from tests.test_cuda.test_sampler_gpu import SETUP, assert_same_trace, trace_run

pytestmark = pytest.mark.gpu

CASES = {
    "primates-gtr-i-g": ("mrbayes/primates.nex", "lset nst=6 rates=invgamma;", 400),
    "cynmix-partitioned": ("mrbayes/cynmix.nex", "set partition=favored; lset applyto=(2,3,4,5) nst=6 rates=gamma;"
                           " lset applyto=(1) coding=all; unlink shape=(all) statefreq=(all);"
                           " prset ratepr=variable;", 200),
}


def _settings(tmp_path, shared_data, case):
    import io

    from mbgpu.console import Console
    from mbgpu.interpreter import Interpreter
    from mbgpu.sampler.mc3 import RunOptions

    data, lset, ngen = CASES[case]
    (tmp_path / "s.nex").write_text("#NEXUS\n" + SETUP.format(data=shared_data / data, lset=lset, ngen=ngen))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(tmp_path / "s.nex"))
    return interp.settings, RunOptions.from_settings(interp.settings.mcmc), ngen


@pytest.mark.parametrize("blocks", [False, True], ids=["generations", "device-blocks"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_core_on_the_gpu_matches_the_core_on_the_host(case, blocks, shared_data, tmp_path, monkeypatch):
    """device-blocks: the GPU's generations in compiled blocks (mbgpu.core.device_block, the default);
    generations: one at a time (CoreStepper.step)."""
    import mbgpu.core.stepper as stepper
    from mbgpu.core.device_block import DeviceBlockRunner
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.likelihood.compiled_backend import CompiledBackend

    monkeypatch.setattr(DeviceBlockRunner, "enabled", blocks)
    monkeypatch.chdir(tmp_path)
    settings, opts, ngen = _settings(tmp_path, shared_data, case)
    kinds, init = set(), stepper.CoreStepper.__init__

    def noted(self, chains):
        init(self, chains)
        kinds.update(type(d).__name__ for d in self.divisions)

    monkeypatch.setattr(stepper.CoreStepper, "__init__", noted)
    cpu = trace_run(settings, CompiledBackend, opts)
    gpu = trace_run(settings, backend_factory(precision="double"), opts)
    assert kinds == {"DivisionArrays", "DeviceDivision"}
    assert_same_trace(cpu, gpu, ngen // 10 + 1)


def test_core_on_the_gpu_in_single_precision_starts_close(shared_data, tmp_path, monkeypatch):
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.likelihood.compiled_backend import CompiledBackend

    monkeypatch.chdir(tmp_path)
    settings, opts, _n = _settings(tmp_path, shared_data, "primates-gtr-i-g")
    cpu = trace_run(settings, CompiledBackend, opts)
    gpu = trace_run(settings, backend_factory(precision="single"), opts)
    for (pa, la, lnl_a), (pb, lb, lnl_b) in zip(cpu[1], gpu[1]):       # after 10 generations
        if np.array_equal(pa, pb) and np.array_equal(la, lb):
            assert lnl_b == pytest.approx(lnl_a, rel=1e-5)
    assert all(np.isfinite(lnl) for row in gpu for (_p, _b, lnl) in row)
