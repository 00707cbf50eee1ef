"""The compiled core drives mcmc when it can, and its files do not depend on the thread count."""
import io

import numba
import pytest

import mbgpu.core.stepper as stepper
from mbgpu.core.block import BlockRunner
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA

BLOCK = ("#NEXUS\nbegin mrbayes; set seed=4 swapseed=5;\nexecute %s;\nlset nst=6 rates=invgamma;\n"
         "mcmc ngen=300 nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=100 filename=r; end;\n"
         % (TEST_DATA / "primates.nex"))


def _run(folder, monkeypatch, threads):
    folder.mkdir()
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text(BLOCK)
    steps = []
    step, run_block = stepper.CoreStepper.step, BlockRunner.run
    monkeypatch.setattr(stepper.CoreStepper, "step", lambda self, *a: steps.append(1) or step(self, *a))

    def counted_block(self, mc3, first, last):
        done = run_block(self, mc3, first, last)
        steps.extend([1] * (done - first + 1))
        return done

    monkeypatch.setattr(BlockRunner, "run", counted_block)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        Interpreter(Console(io.StringIO())).run_file(str(folder / "run.nex"))
    finally:
        numba.set_num_threads(before)
    return len(steps)     # generations the core stepped, one by one or in compiled blocks


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_core_runs_and_threads_do_not_change_the_files(tmp_path, monkeypatch):
    assert _run(tmp_path / "one", monkeypatch, 1) == 300
    assert _run(tmp_path / "two", monkeypatch, 2) == 300
    for name in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
