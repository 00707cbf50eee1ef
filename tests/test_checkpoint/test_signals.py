"""SIGTERM/SIGINT/SIGUSR1 stop a run at the end of the current generation with a checkpoint."""
import io
import signal
import subprocess
import sys
import time

import pytest

from mbgpu.checkpoint.signals import RunStopped
from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.sampler.mc3 import MC3
from tests.test_checkpoint.common import block, run_in, run_text, same_outputs


def send_at(monkeypatch, gen: int, signum: int):
    """Make the run signal itself while stepping generation `gen` (one by one; a compiled block holding
    `gen` stops at its end, so blocks are off here: tests/test_core/test_block.py covers their stops)."""
    step = MC3.step_all

    def stepping(self):
        if self.gen == gen:
            signal.raise_signal(signum)
        step(self)

    monkeypatch.setattr(MC3, "step_all", stepping)
    monkeypatch.setattr(MC3, "compiled_blocks", False)


@pytest.mark.parametrize("signum", [signal.SIGUSR1, signal.SIGTERM, signal.SIGINT])
def test_signal_writes_checkpoint_and_resume_is_exact(tmp_path, monkeypatch, signum):
    run_text(tmp_path / "ref", block(200), monkeypatch)
    old = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)}
    work = tmp_path / "w"
    work.mkdir()
    with monkeypatch.context() as m:
        send_at(m, 77, signum)
        with pytest.raises(RunStopped) as stopped:
            run_in(work, block(200, "checkfreq=50"), m)
    assert stopped.value.code == 128 + signum
    assert {s: signal.getsignal(s) for s in old} == old, "the previous handlers are restored"
    text = run_in(work, block(200, "append=yes"), monkeypatch)
    assert "at generation 77" in text
    assert same_outputs(tmp_path / "ref", work) == []


def test_message_and_summary_on_stop(tmp_path, monkeypatch):
    out = io.StringIO()
    (tmp_path / "a.nex").write_text(block(200) + "begin mrbayes; sump; end;\n")
    monkeypatch.chdir(tmp_path)
    send_at(monkeypatch, 33, signal.SIGUSR1)
    with pytest.raises(RunStopped):
        Interpreter(Console(out)).run_file(str(tmp_path / "a.nex"))
    text = out.getvalue()
    assert "SIGUSR1 received." in text
    assert "Checkpoint written at generation 33 to r.ckp.h5; resume with 'mcmc append=yes ngen=200'" in text
    assert "Analysis completed in" in text and "Acceptance rates" in text
    assert "Summary statistics" not in text, "commands after the stopped mcmc are not run"
    assert (tmp_path / "r.run1.t").read_text().rstrip().endswith("end;")


def test_sigterm_to_the_mbgpu_process(tmp_path):
    cmd = tmp_path / "a.nex"
    cmd.write_text(block(100000, "checkfreq=1000000"))
    proc = subprocess.Popen([sys.executable, "-m", "mbgpu", str(cmd)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    while not (tmp_path / "r.run1.p").exists() and time.time() - t0 < 60:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out[-1500:]
    assert "SIGTERM received." in out and "resume with 'mcmc append=yes ngen=100000'" in out
    from mbgpu.checkpoint.session import load

    gen = int(load(str(tmp_path / "r.ckp.h5"))["mc3/generation"][0])
    assert 0 < gen < 100000 and "Checkpoint written at generation %d to r.ckp.h5" % gen in out
