"""A real MCMC on the CUDA backend (batched: one flush per generation for all chains) against the same
MCMC on the numpy backend: same accepted states, log likelihoods within 1e-8 relative every generation."""
import io

import numpy as np
import pytest

from mbgpu.analysis import division_pattern_sets
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.sampler.mc3 import MC3, RunOptions
from mbgpu.sampler.setup import build_runs

pytestmark = pytest.mark.gpu

SETUP = ("begin mrbayes; set seed=7 swapseed=8; execute {data};\n {lset}\n"
         " mcmcp ngen={ngen} nruns=2 nchains=3 samplefreq=10 printfreq=1000 diagnfreq=1000 tunefreq=50; end;\n")
CASES = {
    "primates-gtr-i-g": ("mrbayes/primates.nex", "lset nst=6 rates=invgamma;", 300),
    "cynmix-partitioned": ("mrbayes/cynmix.nex", "set partition=favored; lset applyto=(2,3,4,5) nst=6 rates=gamma;"
                           " lset applyto=(1) coding=variable; unlink shape=(all); prset ratepr=variable;", 120),
}


class Trace:
    """A sink that records every chain's (tree parent array, lnL) at every sampled generation."""

    def __init__(self):
        self.rows = []

    def sample(self, gen, mc3):
        self.rows.append([(c.tree.parent.copy(), c.tree.brlen.copy(), c.lnl) for run in mc3.runs for c in run])

    def diagnose(self, gen, mc3, show=True, kept=True):
        return None

    def comparison_lines(self):
        return []


def trace_run(settings, factory, opts):
    sets = division_pattern_sets(settings)
    runs, _ = build_runs(settings, sets, opts, factory, 7)
    sink = Trace()
    MC3(runs, opts, np.random.default_rng(8), sink, Console(io.StringIO())).run()
    return sink.rows


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("sampler", ["batched", "chain", "batched-async"])
def test_gpu_mcmc_matches_numpy(case, sampler, shared_data, tmp_path, monkeypatch, sampler_path, interpreted):
    """`batched-async`: asynchronous flushes (page-locked flushes, per-flush events, ParsSPR's own stream)."""
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.likelihood.numpy_backend import NumpyBackend

    monkeypatch.chdir(tmp_path)
    sampler_path(sampler.split("-")[0])
    data, lset, ngen = CASES[case]
    (tmp_path / "s.nex").write_text("#NEXUS\n" + SETUP.format(data=shared_data / data, lset=lset, ngen=ngen))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(tmp_path / "s.nex"))
    opts = RunOptions.from_settings(interp.settings.mcmc)
    cpu = trace_run(interp.settings, NumpyBackend, opts)
    gpu = trace_run(interp.settings, backend_factory(precision="double", asynchronous=sampler.endswith("async")), opts)
    assert_same_trace(cpu, gpu, ngen // 10 + 1)


def assert_same_trace(a_rows, b_rows, n_samples: int, rel: float = 1e-8) -> None:
    """Two traces: every chain in the same state at every sample, log likelihoods within `rel`."""
    assert len(a_rows) == len(b_rows) == n_samples
    worst = 0.0
    for gen, (a, b) in enumerate(zip(a_rows, b_rows)):
        for (pa, la, lnl_a), (pb, lb, lnl_b) in zip(a, b):
            assert np.array_equal(pa, pb) and np.array_equal(la, lb), "states differ at sample %d" % gen
            worst = max(worst, abs(lnl_a / lnl_b - 1.0))
    assert worst < rel, worst
