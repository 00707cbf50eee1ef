"""The one run driver (mbgpu.run_driver): the serial placement and the MPI placement on a one-rank stand-in
communicator write the same files and screen, a continuation included; the run sequence exists once and
the core does not import the MPI layer. The same under real mpiexec: tests/test_mpi/test_mpiexec.py."""
import io
import subprocess
import sys
from pathlib import Path

import pytest

import mbgpu.run_driver as run_driver
from mbgpu.console import Console
from mbgpu.errors import MbgpuError
from mbgpu.interpreter import Interpreter
from tests.test_checkpoint.common import block, hashes, same_outputs
from tests.test_mpi.launch import screen

ROOT = Path(__file__).resolve().parents[1]


class Finished:
    """A non-blocking request that is already done (OneRank's)."""

    def Wait(self):
        pass


class OneRank:
    """An MPI communicator of one rank, in this process (what MpiPlacement and DistributedMC3 call)."""

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 1

    def bcast(self, obj, root=0):
        return obj

    def gather(self, obj, root=0):
        return [obj]

    def allgather(self, obj):
        return [obj]

    def scatter(self, parts, root=0):
        return parts[0]

    def Split(self, color, key):
        return self

    def Barrier(self):
        pass

    def Iallreduce(self, send, recv, op=None):
        recv[...] = send
        return Finished()

    def Abort(self, code):
        raise AssertionError("MPI.Abort(%d)" % code)


def _run(folder, text, monkeypatch, mpi: bool) -> str:
    """Run `text` in `folder` through the driver with the serial or the one-rank MPI placement; the screen."""
    import mbgpu.mpi.devices as devices
    from mbgpu.mpi.driver import MpiPlacement

    if mpi:
        monkeypatch.setattr(devices, "local_comm", lambda comm: comm)
        monkeypatch.setattr(devices, "share_cores", lambda n: n)
        monkeypatch.setattr(run_driver, "placement", lambda s, ss=None: MpiPlacement(OneRank(), s))
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text(text)
    out = io.StringIO()
    try:
        Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    finally:
        monkeypatch.undo()
    return out.getvalue()


def test_serial_and_mpi_placements_write_the_same(tmp_path, monkeypatch):
    """Same files, same screen (less the MPI layout table), the same after a continuation (append=yes)."""
    text = block(60, "checkfreq=25")
    serial = _run(tmp_path / "serial", text, monkeypatch, mpi=False)
    mpi = _run(tmp_path / "mpi", text, monkeypatch, mpi=True)
    assert "MPI layout: 1 processes, 2 runs x 3 chains" in mpi
    assert screen(mpi) == screen(serial)
    assert same_outputs(tmp_path / "serial", tmp_path / "mpi") == []
    _run(tmp_path / "resumed", block(30, "checkfreq=25"), monkeypatch, mpi=False)
    more = _run(tmp_path / "resumed", block(60, "checkfreq=25 append=yes"), monkeypatch, mpi=True)
    assert "Continuing from checkpoint 'r.ckp.h5' at generation 30" in more
    assert same_outputs(tmp_path / "serial", tmp_path / "resumed") == []


def test_user_error_is_raised_before_the_run(tmp_path, monkeypatch):
    """A checkpoint check that fails is the user's error under the MPI placement too, not an abort."""
    _run(tmp_path, block(40), monkeypatch, mpi=False)
    before = hashes(tmp_path)
    with pytest.raises(MbgpuError, match="beyond ngen=20"):
        _run(tmp_path, block(20, "append=yes"), monkeypatch, mpi=True)
    assert {n: h for n, h in hashes(tmp_path).items() if n != "run.nex"} == {
        n: h for n, h in before.items() if n != "run.nex"}


def test_the_run_sequence_exists_once():
    """Only the driver opens the files, prints the starting states and runs the chains."""
    for name in ("engine/analysis.py", "mpi/run.py", "mpi/driver.py"):
        source = (ROOT / name).read_text()
        for piece in ("Chain results", "Initial log likelihoods", "FileSink(", "CheckpointSession("):
            assert piece not in source, (name, piece)


@pytest.mark.parametrize("module", ["mbgpu.analysis", "mbgpu.run_driver"])
def test_the_core_does_not_import_mpi(module):
    code = ("import sys, %s; bad = [m for m in sys.modules if m.startswith(('mpi4py', 'mbgpu.mpi'))]; "
            "assert not bad, bad" % module)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT / "tests")
    assert proc.returncode == 0, proc.stderr
