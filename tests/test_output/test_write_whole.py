"""sump's and sumt's summary files are written whole (mbgpu.output.write_failure.write_text_whole): a failed
write is one OutputWriteFailed and leaves the earlier file and no partial copy."""
import os
import resource
import subprocess
import sys

import pytest

from mbgpu.output.write_failure import OutputWriteFailed, write_text_whole


def test_the_text_replaces_the_file(tmp_path):
    path = tmp_path / "r.pstat"
    path.write_text("old\n")
    write_text_whole(str(path), "new\n", "the summary file")
    assert path.read_text() == "new\n" and sorted(os.listdir(tmp_path)) == ["r.pstat"]


def test_a_failed_rename_keeps_nothing_partial(tmp_path):
    (tmp_path / "r.pstat").mkdir()                        # the name is taken by a folder
    with pytest.raises(OutputWriteFailed) as e:
        write_text_whole(str(tmp_path / "r.pstat"), "x\n", "the summary file")
    line = e.value.one_line()
    assert "writing the summary file failed" in line and "\n" not in line
    assert sorted(os.listdir(tmp_path)) == ["r.pstat"]


def test_a_file_size_limit_leaves_the_earlier_file(tmp_path):
    path = tmp_path / "r.parts"
    path.write_text("earlier\n")
    code = ("import sys; from mbgpu.output.write_failure import OutputWriteFailed, write_text_whole\n"
            "try:\n    write_text_whole(sys.argv[1], 'y' * 100000, 'the summary file')\n"
            "except OutputWriteFailed as e:\n    print(e.one_line()); sys.exit(2)\n")
    limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))   # noqa: E731
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, preexec_fn=limit)
    assert out.returncode == 2, out.stderr
    assert "EFBIG" in out.stdout and "it needs 100000 bytes" in out.stdout
    assert path.read_text() == "earlier\n" and sorted(os.listdir(tmp_path)) == ["r.parts"]
