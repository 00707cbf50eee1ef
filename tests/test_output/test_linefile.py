"""LineFile and the write-failure message: whole lines only, the file cut back to its last whole line when a
write fails, and one line that names the file, the errno and the limit."""
import errno
import os
import resource

import pytest

from mbgpu.output.linefile import LineFile
from mbgpu.output.write_failure import OutputWriteFailed, describe


def failing_writes(monkeypatch, after: int, code: int = errno.ENOSPC, short: int = 5):
    """os.write that succeeds `after` times, then writes `short` bytes once and raises OSError(code)."""
    real, calls = os.write, {"n": 0}

    def write(fd, data):
        calls["n"] += 1
        if calls["n"] <= after:
            return real(fd, data)
        if calls["n"] == after + 1:
            return real(fd, bytes(data)[:short])
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "write", write)


def test_only_whole_lines_reach_the_file(tmp_path):
    f = LineFile(str(tmp_path / "a.p"), "the samples")
    f.write("Gen\tLnL\n12\t-3.")
    f.flush()
    assert (tmp_path / "a.p").read_text() == "Gen\tLnL\n"
    f.write("5\n")
    f.close()
    assert (tmp_path / "a.p").read_text() == "Gen\tLnL\n12\t-3.5\n"


def test_failed_write_cuts_back_to_the_last_whole_line(tmp_path, monkeypatch):
    path = tmp_path / "a.t"
    f = LineFile(str(path), "the tree samples of run 1")
    f.write("#NEXUS\n")
    f.flush()
    failing_writes(monkeypatch, after=0)
    f.write("   tree gen.10 = [&U] (1,2,3);\n")
    with pytest.raises(OutputWriteFailed) as err:
        f.flush()
    assert path.read_bytes() == b"#NEXUS\n", "the half-written line is removed"
    assert err.value.where.file == str(path) and err.value.errno == errno.ENOSPC
    assert "writing the tree samples of run 1 failed: No space left on device (ENOSPC" in err.value.message
    f.write("more\n")
    f.close()                                        # after a failure nothing more is written
    assert path.read_bytes() == b"#NEXUS\n"


def test_append_keeps_the_file_and_counts_its_size(tmp_path):
    path = tmp_path / "a.p"
    path.write_text("one\n")
    f = LineFile(str(path), "x", append=True)
    assert f.size == 4
    f.write("two\n")
    f.sync()
    assert f.size == 8 and path.read_text() == "one\ntwo\n"
    f.close()


def test_efbig_names_the_file_size_limit(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (61440, resource.RLIM_INFINITY))
    text = describe(OSError(errno.EFBIG, "File too large"), "x.t", needed=345)
    assert text == "File too large (EFBIG; it needs 345 bytes; the file size limit, ulimit -f, is 61440 bytes)"


def test_enospc_names_the_free_space(tmp_path):
    text = describe(OSError(errno.ENOSPC, "No space left on device"), str(tmp_path / "x.p"))
    assert text.startswith("No space left on device (ENOSPC; ") and "bytes free on that file system" in text


def test_after_checkpoint_says_what_can_continue():
    err = OutputWriteFailed("r.run1.p", "the parameter samples of run 1", OSError(errno.EIO, "Input/output error"))
    assert err.after_checkpoint(400, "r.ckp.h5").one_line() == (
        "r.run1.p: error: writing the parameter samples of run 1 failed: Input/output error (EIO); the last "
        "checkpoint (generation 400, 'r.ckp.h5') is intact; run again with mcmc append=yes to continue")
    err = OutputWriteFailed("r.run1.p", "x", OSError(errno.EIO, "Input/output error"))
    assert err.after_checkpoint(None, "r.ckp.h5").message.endswith("no checkpoint was written yet, so the run "
                                                                   "must start again (mcmc append=no)")
