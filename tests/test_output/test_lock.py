"""The output lock (mbgpu.output.lock): one run per output prefix, stale locks taken over, the lock gone
however the run ends; and two real processes on one prefix."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import mbgpu.run_driver as run_driver
from mbgpu.checkpoint.signals import RunStopped, exit_on_stop_signals
from mbgpu.output import lock
from mbgpu.output.lock import LockOwner, OutputInUse, OutputLock
from tests.test_checkpoint.common import block, hashes, run_text


def dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def write_lock(prefix, host: str, pid: int) -> str:
    text = LockOwner(host, pid, "2026-11-24 17:40:00").text()
    (prefix.parent / (prefix.name + ".lock")).write_text(text)
    return text


def test_lock_file_names_this_process_and_goes_on_release(tmp_path):
    prefix = str(tmp_path / "r")
    with OutputLock.acquire(prefix, warn=pytest.fail) as held:
        d = json.loads((tmp_path / "r.lock").read_text())
        assert (d["program"], d["pid"], d["host"]) == ("mbgpu", os.getpid(), socket.gethostname())
        assert held.owner.pid == os.getpid()
    assert not (tmp_path / "r.lock").exists()


def test_live_lock_stops_the_second_run_with_one_line(tmp_path):
    prefix = str(tmp_path / "r")
    with OutputLock.acquire(prefix, warn=pytest.fail):
        with pytest.raises(OutputInUse) as err:
            OutputLock.acquire(prefix, warn=pytest.fail)
        assert (tmp_path / "r.lock").exists(), "the refused run leaves the owner's lock alone"
    line = err.value.one_line()
    assert line.startswith("%s.lock: error: output prefix '%s' is in use by mbgpu (pid %d on host %s, since "
                           % (prefix, prefix, os.getpid(), socket.gethostname()))
    assert line.endswith("wait for it or choose another mcmc filename=") and "\n" not in line


def test_stale_lock_is_taken_over_with_a_warning(tmp_path):
    write_lock(tmp_path / "r", socket.gethostname(), dead_pid())
    warnings = []
    with OutputLock.acquire(str(tmp_path / "r"), warn=warnings.append):
        assert json.loads((tmp_path / "r.lock").read_text())["pid"] == os.getpid()
    assert len(warnings) == 1 and "taking over the stale lock" in warnings[0] and "\n" not in warnings[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "no lock nor stale file left behind"


def test_lock_of_another_host_is_never_taken_over(tmp_path):
    text = write_lock(tmp_path / "r", "elsewhere.example", dead_pid())
    with pytest.raises(OutputInUse) as err:
        OutputLock.acquire(str(tmp_path / "r"), warn=pytest.fail)
    assert "on host elsewhere.example" in err.value.message and "another host" in err.value.message
    assert (tmp_path / "r.lock").read_text() == text


def test_damaged_lock_file_is_refused_not_removed(tmp_path):
    (tmp_path / "r.lock").write_text("")
    with pytest.raises(OutputInUse, match="names no mbgpu run"):
        OutputLock.acquire(str(tmp_path / "r"), warn=pytest.fail)
    assert (tmp_path / "r.lock").exists()


def test_stale_removal_gives_back_a_lock_another_run_took_meanwhile(tmp_path):
    """Two runs found the same stale lock; the first replaced it with its own before the second moved it
    aside: the second puts the live lock back and does not delete it."""
    stale = write_lock(tmp_path / "r", socket.gethostname(), dead_pid())
    live = write_lock(tmp_path / "r", socket.gethostname(), os.getpid())
    assert not lock._remove_stale(str(tmp_path / "r.lock"), stale)
    assert (tmp_path / "r.lock").read_text() == live
    assert [p.name for p in tmp_path.iterdir()] == ["r.lock"]


def test_release_leaves_a_lock_that_is_not_ours(tmp_path):
    held = OutputLock.acquire(str(tmp_path / "r"), warn=pytest.fail)
    other = write_lock(tmp_path / "r", "elsewhere.example", 1)
    held.release()
    assert (tmp_path / "r.lock").read_text() == other


def test_lock_removed_after_a_run_and_after_a_failed_one(tmp_path, monkeypatch):
    run_text(tmp_path, block(40, mcmc="nruns=1 nchains=1 samplefreq=10 printfreq=20 diagnfreq=20 filename=r"),
             monkeypatch)
    assert (tmp_path / "r.run1.p").exists() is False and (tmp_path / "r.p").exists()
    assert not (tmp_path / "r.lock").exists()
    with pytest.raises(Exception, match="no checkpoint"):
        run_text(tmp_path, block(40, "append=yes checkpoint=yes", mcmc="nruns=1 nchains=1 filename=q"), monkeypatch)
    assert not (tmp_path / "q.lock").exists()


def test_sigterm_before_the_run_loop_stops_and_unlocks(tmp_path, monkeypatch):
    """SIGTERM while the chains are built (no run loop yet) exits 143 through the handlers, lock removed."""
    def begin(s, con):
        assert (tmp_path / "r.lock").exists()
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(run_driver, "begin", begin)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunStopped) as stopped:
        run_text(tmp_path, block(40), monkeypatch)
    assert stopped.value.code == 143
    assert not (tmp_path / "r.lock").exists()
    assert signal.getsignal(signal.SIGTERM) == before


def test_exit_on_stop_signals_restores_handlers():
    before = signal.getsignal(signal.SIGUSR1)
    with pytest.raises(RunStopped):
        with exit_on_stop_signals():
            signal.raise_signal(signal.SIGUSR1)
    assert signal.getsignal(signal.SIGUSR1) == before


def test_two_processes_on_one_prefix(tmp_path):
    """The second run stops at once with one line and status 2 and touches none of the first run's files;
    the first, stopped by SIGTERM, removes its lock."""
    cmd = tmp_path / "long.nex"
    cmd.write_text(block(10 ** 6, "checkfreq=500"))
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    first = subprocess.Popen([sys.executable, "-m", "mbgpu", str(cmd)], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        t0 = time.time()
        while not (tmp_path / "r.ckp.h5").exists() and time.time() - t0 < 60:
            time.sleep(0.05)
        first.send_signal(signal.SIGSTOP)          # hold its files still while the second run tries
        held = json.loads((tmp_path / "r.lock").read_text())
        before = hashes(tmp_path)
        second = subprocess.run([sys.executable, "-m", "mbgpu", str(cmd)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=60)
        after = hashes(tmp_path)
        first.send_signal(signal.SIGCONT)
    finally:
        first.send_signal(signal.SIGTERM)
        first.send_signal(signal.SIGCONT)
        out, _ = first.communicate(timeout=60)
    assert held["pid"] == first.pid
    assert after == before, "the second run opened, truncated or wrote a file"
    assert second.returncode == 2, second.stderr
    assert second.stderr.splitlines() == [
        "r.lock: error: output prefix 'r' is in use by mbgpu (pid %d on host %s, since %s); wait for it or "
        "choose another mcmc filename=" % (first.pid, socket.gethostname(), held["since"][:16])]
    assert first.returncode == 143, out[-1500:]
    assert not (tmp_path / "r.lock").exists()


def test_the_module_doctest():
    import doctest

    assert doctest.testmod(lock).failed == 0
