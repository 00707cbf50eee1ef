"""Compiled blocks of generations on a GPU process (mbgpu.core.device_block), run without a GPU: the
pattern sets sit on a CUDA backend stand-in whose compiled flushes a host driver replays
(tests.test_core.host_driver). Blocks must write the files and screen of single generations (the
per-generation path with its groups, group 0 proposed ahead and proposed again after swaps). The
backend starts without the invariant-site table, as CudaBackend does (a block must build it: a GPU run
found it missing when a chain's pinvar left 0)."""
import pytest

from mbgpu.core import device_block
from mbgpu.likelihood.numpy_backend import NumpyBackend
from tests.conftest import TEST_DATA
from tests.test_core.test_block import CLOCK, _run as run_text
from tests.test_core.host_driver import CompiledPackedHost

FILES = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")
PRIMATES = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5 backend=gpu;\nexecute %s;\nlset nst=6 rates=invgamma;\n"
            "mcmc ngen=240 nruns=2 nchains=%d tunefreq=10 samplefreq=20 printfreq=60 diagnfreq=60 filename=r; end;\n")
CYNMIX = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5 backend=gpu;\nexecute %s;\nset partition=favored;\n"
          "lset applyto=(2,3,4,5) nst=6 rates=gamma; lset applyto=(1) coding=all;\n"
          "unlink shape=(all) revmat=(all) statefreq=(all);\n"
          "prset ratepr=variable;\nmcmc ngen=120 nruns=2 nchains=2 samplefreq=20 printfreq=60 diagnfreq=60 "
          "filename=r; end;\n")


def _run(folder, monkeypatch, blocks: bool, text: str):
    """test_block's run of `text` in `folder` on the host-driven CUDA stand-in, in compiled blocks or
    not: the screen (times blanked) and the generations that device blocks ran."""
    import mbgpu.likelihood.select as select

    monkeypatch.setattr(select, "_cuda_available", lambda: True)
    monkeypatch.setattr(select, "_gpu_factory", lambda precision, device=None, asynchronous=False:
                        lambda spec: CompiledPackedHost(NumpyBackend(spec)))
    monkeypatch.setattr(device_block.DeviceBlockRunner, "enabled", True)
    return run_text(folder, monkeypatch, blocks, text, runner=device_block.DeviceBlockRunner)


def _text(case: str) -> str:
    if case == "cynmix":
        return CYNMIX % (TEST_DATA / "cynmix.nex")
    if case == "clock-igr":
        return CLOCK.replace("set seed=4", "set seed=4 backend=gpu") % (TEST_DATA / "primates.nex", "clockvarpr=igr",
                                                                         240)
    return PRIMATES % (TEST_DATA / "primates.nex", 1 if "1-chain" in case else 3)


@pytest.mark.parametrize("case", ["primates-3-chains", "primates-1-chain", "cynmix", "clock-igr"])
def test_device_blocks_write_the_files_and_screen_of_single_generations(tmp_path, monkeypatch, case):
    """primates: tunefreq=10, so that a chain's tuning differs from the heat it swaps with and a proposal
    made ahead with the old tuning would change the files (it must be made again)."""
    text = _text(case)
    screen, n = _run(tmp_path / "blocks", monkeypatch, True, text)
    assert n > (80 if case == "cynmix" else 200)
    single, n_single = _run(tmp_path / "single", monkeypatch, False, text)
    assert n_single == 0
    for name in FILES:
        assert (tmp_path / "blocks" / name).read_bytes() == (tmp_path / "single" / name).read_bytes(), name
    assert screen == single


def test_models_left_to_the_host_end_device_blocks_with_the_files_of_single_generations(tmp_path, monkeypatch):
    """Every parameter proposal's model built on the host (as when the core cannot compute one): the block
    ends before that generation, undone (the groups in flight collected, their streams rewound), the
    per-generation step makes it, and the next block goes on; the files are those of single generations."""
    import mbgpu.core.chain_generation as generation
    import mbgpu.core.stepper as stepper

    real_plan, real_proposal = generation.plan_chain, stepper.model_proposal
    py_plan = generation.propose_and_plan.py_func
    py_block = {name: getattr(device_block, name).py_func for name in ("run_device_block", "_start")}
    to_host = []

    def plan_on_host(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need):
        real_plan(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need)
        hit = touch[moved[c]]
        to_host.append(bool(hit.any()))
        need[hit, c] = True
        return not hit.any()

    def run(folder, blocks):
        monkeypatch.setattr(stepper, "model_proposal", lambda *a: real_proposal(*a) and False)
        monkeypatch.setattr(generation, "plan_chain", plan_on_host)
        monkeypatch.setattr(device_block, "propose_and_plan", py_plan)
        for name, fn in py_block.items():
            monkeypatch.setattr(device_block, name, fn)
        return _run(folder, monkeypatch, blocks, _text("primates-3-chains").replace("ngen=240", "ngen=100"))

    screen, n = run(tmp_path / "blocks", True)
    assert n > 30 and sum(to_host) > 20          # blocks ran, and many ended for the host
    single, _ = run(tmp_path / "single", False)
    for name in FILES:
        assert (tmp_path / "blocks" / name).read_bytes() == (tmp_path / "single" / name).read_bytes(), name
    assert screen == single


def test_device_blocks_time_their_waits_for_the_flushes(tmp_path, monkeypatch):
    """CoreFlushes.waited counts every collect of a block (benchmarks/block_timing.py reports it per rank)."""
    runners = []
    inner = device_block.DeviceBlockRunner.generations

    def generations(self, job):
        inner(self, job)
        runners.append(self)

    monkeypatch.setattr(device_block.DeviceBlockRunner, "generations", generations)
    screen, n = _run(tmp_path, monkeypatch, True, _text("primates-3-chains"))
    assert n > 200 and len({id(r) for r in runners}) == 1
    (flushes,) = {id(d.flushes): d.flushes for d in runners[0].core.divisions}.values()
    seconds, waits = flushes.waited()
    assert waits >= n and 0.0 < seconds < 60.0       # two groups: a collect each per generation in blocks
