"""A write that fails (file size limit, full disk) ends a run with one line and status 2, never a traceback
or a crash; the sample files hold whole lines only; the last checkpoint loads and `append=yes` continues
to the same files as an uninterrupted run. A partial last line found on resume is cut with a note."""
import errno
import os
import re
import resource
import subprocess
import sys

import pytest

import mbgpu.checkpoint.h5io as h5io
from mbgpu.checkpoint.session import load
from mbgpu.output.write_failure import OutputWriteFailed
from tests.test_checkpoint.common import PRIMATES, block, run_in, run_text, same_outputs

SAMPLES = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t")


def nexus(ngen: int, extra: str = "") -> str:
    return ("#NEXUS\nbegin mrbayes; execute %s;\n set seed=1;\n mcmc ngen=%d samplefreq=10 printfreq=1000 "
            "diagnfreq=1000 filename=r %s; end;\n" % (PRIMATES, ngen, extra))


def mbgpu(folder, text: str, fsize: int | None = None) -> subprocess.CompletedProcess:
    """Run `text` as a file with mbgpu in `folder`, under a file size limit of `fsize` bytes (ulimit -f)."""
    (folder / "run.nex").write_text(text)

    def limit():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "mbgpu", "run.nex"], cwd=folder, env=env, preexec_fn=limit,
                          capture_output=True, text=True, timeout=120)


def whole_lines(folder) -> bool:
    return all((folder / n).read_bytes().endswith(b"\n") for n in SAMPLES)


def test_file_size_limit_on_a_sample_file_then_append_continues(tmp_path):
    ref, work = tmp_path / "ref", tmp_path / "w"
    ref.mkdir()
    work.mkdir()
    assert mbgpu(ref, nexus(4000, "checkfreq=500")).returncode == 0
    r = mbgpu(work, nexus(4000, "checkfreq=500"), fsize=100 * 1024)
    assert r.returncode == 2, r.stderr[-2000:]
    [line] = r.stderr.splitlines()
    m = re.fullmatch(r"r\.run\d\.t: error: writing the tree samples of run \d failed: File too large \(EFBIG; it "
                     r"needs \d+ bytes; the file size limit, ulimit -f, is 102400 bytes\); the last checkpoint "
                     r"\(generation (\d+), 'r\.ckp\.h5'\) is intact; run again with mcmc append=yes to continue",
                     line)
    assert m, line
    assert whole_lines(work), "no half line in any sample file"
    assert int(load(str(work / "r.ckp.h5"))["mc3/generation"][0]) == int(m.group(1))
    assert not (work / "r.lock").exists()
    r = mbgpu(work, nexus(4000, "checkfreq=500 append=yes"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Continuing from checkpoint 'r.ckp.h5' at generation %s" % m.group(1) in r.stdout
    assert same_outputs(ref, work, SAMPLES + ("r.mcmc",)) == []


def test_file_size_limit_on_the_first_checkpoint_is_one_line_not_a_crash(tmp_path):
    """HDF5 writing to a file past `ulimit -f` used to leave a half-closed file that segfaulted at exit."""
    r = mbgpu(tmp_path, nexus(400, "checkfreq=100"), fsize=60 * 1024)
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert r.stderr.splitlines() == [r.stderr.strip()] and "Traceback" not in r.stderr
    assert re.fullmatch(r"r\.ckp\.h5: error: writing the checkpoint failed: File too large \(EFBIG; it needs \d+ "
                        r"bytes; the file size limit, ulimit -f, is 61440 bytes\); no checkpoint was written yet, "
                        r"so the run must start again \(mcmc append=no\)", r.stderr.strip()), r.stderr
    assert not (tmp_path / "r.ckp.h5.tmp").exists() and not (tmp_path / "r.ckp.h5").exists()
    assert whole_lines(tmp_path)


def test_full_disk_at_a_later_checkpoint_keeps_the_earlier_one(tmp_path, monkeypatch):
    run_text(tmp_path / "ref", block(200), monkeypatch)
    real, calls = h5io.write_all, []

    def write_all(fd, data):
        calls.append(len(data))
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    work = tmp_path / "w"
    work.mkdir()
    with monkeypatch.context() as m:
        m.setattr(h5io, "write_all", write_all)
        with pytest.raises(OutputWriteFailed) as err:
            run_in(work, block(200, "checkfreq=50"), m)
    assert err.value.where.file == "r.ckp.h5"
    assert "No space left on device (ENOSPC; it needs" in err.value.message
    assert err.value.message.endswith("the last checkpoint (generation 100, 'r.ckp.h5') is intact; run again "
                                      "with mcmc append=yes to continue")
    assert not (work / "r.ckp.h5.tmp").exists() and not (work / "r.lock").exists()
    text = run_in(work, block(200, "append=yes"), monkeypatch)
    assert "at generation 100" in text
    assert same_outputs(tmp_path / "ref", work) == []


def test_partial_last_line_is_cut_on_resume_with_a_note(tmp_path, monkeypatch):
    run_text(tmp_path / "ref", block(200), monkeypatch)
    work = tmp_path / "w"
    work.mkdir()
    run_in(work, block(100, "checkfreq=50"), monkeypatch)
    with open(work / "r.run1.p", "a") as fh:
        fh.write("120\t-2345.6")                    # a sample line cut short by a full disk or a kill
    text = run_in(work, block(200, "append=yes"), monkeypatch)
    notes = [line for line in text.splitlines() if "partial line" in line]
    assert notes == ["   Note: 'r.run1.p' ended in a partial line (%d bytes after the checkpoint); it is cut "
                     "back to the checkpoint's last whole line" % len("120\t-2345.6")]
    assert same_outputs(tmp_path / "ref", work) == []


def test_cli_turns_other_storage_errors_into_one_line(monkeypatch, capsys):
    """A full disk met outside the run's own files (a log, the screen redirected) is one line, status 2;
    other OSErrors are bugs and propagate."""
    import mbgpu.cli as cli

    def full(argv):
        raise OSError(errno.ENOSPC, "No space left on device", "run.log")

    monkeypatch.setattr(cli, "_run_files", full)
    assert cli.main(["x.nex"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mbgpu: error: writing 'run.log' failed: No space left on device (ENOSPC; ")
    assert err.count("\n") == 1

    def other(argv):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(cli, "_run_files", other)
    with pytest.raises(OSError):
        cli.main(["x.nex"])
