"""The `mbgpu` command as a user runs it: a subprocess, exit codes, one-line errors."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import DNA4


def mbgpu(*args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "engine", *args], input=stdin, capture_output=True, env=env,
                          text=True, cwd=cwd, timeout=120)


def test_version_and_help():
    r = mbgpu("-v")
    assert r.returncode == 0 and r.stdout.startswith("mbgpu ")
    r = mbgpu("-h")
    assert r.returncode == 0 and "usage: mbgpu [-i]" in r.stdout


def test_bundled_example_runs(tmp_path):
    r = mbgpu(str(ROOT / "configs" / "examples" / "primates.nex"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Division 1 has 413 unique site patterns" in r.stdout
    assert "Initial log likelihoods" in r.stdout
    assert (tmp_path / "primates_example.run1.p").read_text().splitlines()[1].startswith("Gen\tLnL\tLnPr\tTL")


def test_user_error_is_one_line_and_status_2(tmp_path):
    bad = tmp_path / "bad.nex"
    bad.write_text(DNA4 + "begin mrbayes;\n  lset nst=7;\nend;\n")
    r = mbgpu(str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("%s:13:12: error: unknown value for Nst '7'" % bad)
    assert "Traceback" not in r.stderr


def test_missing_file_and_bad_option():
    r = mbgpu("no_such_file.nex")
    assert r.returncode == 2 and "cannot open 'no_such_file.nex'" in r.stderr
    r = mbgpu("--bogus")
    assert r.returncode == 2 and "unknown option" in r.stderr


def test_interactive_prompt_continues_after_error(tmp_path):
    data = tmp_path / "d.nex"
    data.write_text(DNA4)
    r = mbgpu("-i", str(data), stdin="lset nst=9\nlset nst=2\nshowmodel\nquit\n")
    assert r.returncode == 0
    assert "unknown value for Nst '9'" in r.stderr and "Nst          2" in r.stdout


def test_interactive_quitonerror_stops(tmp_path):
    r = mbgpu("-i", stdin="set quitonerror=yes\nbogus\nhelp\n")
    assert r.returncode == 2 and "unknown command 'bogus'" in r.stderr


@pytest.mark.parametrize("text", ["#NEXUS\nbegin data; dimensions ntax=2 nchar=2; format datatype=dna;\n"
                                  "matrix\na AC\nb A\n;\nend;\n",
                                  "#NEXUS\n[ never closed\n", "not nexus at all\n"])
def test_bad_files_never_traceback(tmp_path, text):
    f = tmp_path / "x.nex"
    f.write_text(text)
    r = mbgpu(str(f))
    assert r.returncode == 2 and r.stderr.startswith(str(f)) and "Traceback" not in r.stderr
