"""The `mbgpu` command as a user runs it: a subprocess, exit codes, one-line errors."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.helpers import DNA4


def mbgpu(*args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "mbgpu", *args], input=stdin, capture_output=True, env=env,
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
    assert "unknown value for Nst '9'" in r.stderr and "Nst       = 2" in r.stdout


def test_interactive_quitonerror_stops(tmp_path):
    r = mbgpu("-i", stdin="set quitonerror=yes\nbogus\nhelp\n")
    assert r.returncode == 2 and "unknown command 'bogus'" in r.stderr
    assert r.stderr.startswith("<stdin>:2:1: error:"), r.stderr   # the line as typed, not always line 1


@pytest.mark.parametrize("text", ["#NEXUS\nbegin data; dimensions ntax=2 nchar=2; format datatype=dna;\n"
                                  "matrix\na AC\nb A\n;\nend;\n",
                                  "#NEXUS\n[ never closed\n", "not nexus at all\n"])
def test_bad_files_never_traceback(tmp_path, text):
    f = tmp_path / "x.nex"
    f.write_text(text)
    r = mbgpu(str(f))
    assert r.returncode == 2 and r.stderr.startswith(str(f)) and "Traceback" not in r.stderr


DATA3 = """#NEXUS
begin data; dimensions ntax=3 nchar=4; format datatype=dna missing=? gap=-;
matrix
a ACGT
b ACGA
c ACTT
;
end;
"""


@pytest.mark.parametrize("text, where, message", [
    (DATA3 + "begin mrbayes; lsett nst=6; end;\n", "9:16", "unknown command 'lsett'"),
    (DATA3 + "begin mrbayes; s seed=1; end;\n", "9:16", "ambiguous command 's'"),
    (DATA3 + "begin mrbayes; lset nsx=6; end;\n", "9:21", "unknown parameter of lset 'nsx'"),
    (DATA3 + "begin mrbayes; lset n=6; end;\n", "9:21", "ambiguous parameter of lset 'n'"),
    (DATA3 + "begin mrbayes; lset rates=foo; end;\n", "9:27", "unknown value for Rates 'foo'"),
    (DATA3 + "begin mrbayes; lset coding=no; end;\n", "9:28", "ambiguous value for Coding 'no'"),
    (DATA3.replace("ntax=3", "ntax=4"), "7:1", "the matrix has 3 taxa but dimensions say ntax=4"),
    (DATA3.replace("nchar=4", "nchar=5"), "7:1", "taxon 'a' has 4 characters but dimensions say nchar=5"),
    (DATA3.replace("nchar=4", "nchar=3"), "4:6", "taxon 'a' has more than nchar=3 characters"),
    (DATA3.replace("ACTT", "ACJT"), "6:5", "illegal character 'J' for datatype dna"),
    (DATA3.replace("c ACTT", "a ACTT"), "6:1", "taxon 'a' appears twice"),
    (DATA3.replace("c ACTT\n", ""), "6:1", "the matrix has 2 taxa but dimensions say ntax=3"),
    (DATA3 + "[ never closed\n", "9:1", "unterminated comment"),
    (DATA3 + "begin mrbayes; lset nst=2;\n", "9:1", "block 'mrbayes' is not closed"),
    (DATA3 + "begin mrbayes; charset x = 2-9; end;\n", "9:28", "character range '2-9' is outside 1-4"),
    (DATA3 + "begin mrbayes; execute nosuch.nex; end;\n", "9:24", "cannot open 'nosuch.nex'"),
    (DATA3 + "begin mrbayes; prset aamodelpr=fixed(mt); end;\n", "9:32", "ambiguous Aamodelpr=Fixed name 'mt'"),
    (DATA3.replace("ntax=3", "ntax=2").replace("c ACTT\n", "") + "begin mrbayes; mcmc ngen=1; end;\n",
     "8:16", "an analysis needs at least 3 taxa; the matrix has 2"),
], ids=["unknown-command", "ambiguous-command", "unknown-parameter", "ambiguous-parameter", "unknown-value",
        "ambiguous-value", "ntax-too-big", "nchar-too-big", "nchar-too-small", "illegal-character",
        "repeated-taxon", "missing-taxon", "unterminated-comment", "unterminated-block", "charset-out-of-range",
        "execute-missing-file", "aamodel-name-at-prset", "mcmc-two-taxa"])
def test_every_bad_input_is_one_line_and_status_2(tmp_path, monkeypatch, capsys, text, where, message):
    """Issue 2's bad-input list through the CLI entry point: status 2, one located line, no traceback."""
    from mbgpu.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.nex").write_text(text)
    status = main(["bad.nex"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("bad.nex:%s: error: " % where) and message in err, err


def test_a_directory_is_not_a_file(tmp_path, capsys):
    from mbgpu.cli import main

    assert main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == "mbgpu: error: cannot open '%s': not a file\n" % tmp_path


def test_a_closed_pipe_is_no_traceback():
    """`mbgpu -h | head -1`: the reader is gone before mbgpu writes; it exits quietly (141, as after SIGPIPE)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([sys.executable, "-m", "mbgpu", "-h"], stdout=write_end, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == 141 and r.stderr == ""


def test_prompt_has_line_editing_and_history(tmp_path):
    """At a terminal the prompt is readline's: the up arrow brings back the last command, and the history
    is kept in ~/.mbgpu_history for the next session."""
    pty = pytest.importorskip("pty")
    pytest.importorskip("readline")
    import select

    main, child = pty.openpty()
    env = dict(os.environ, HOME=str(tmp_path), TERM="xterm")
    proc = subprocess.Popen([sys.executable, "-m", "mbgpu"], stdin=child, stdout=child, stderr=child, env=env,
                            cwd=tmp_path)
    os.close(child)
    seen = b""

    def until_prompt(count: int) -> None:
        """Read the terminal until the prompt has been shown `count` times."""
        nonlocal seen
        while seen.count(b"mbgpu > ") < count:
            ready, _, _ = select.select([main], [], [], 60)
            assert ready, "no prompt within 60 s; screen: %r" % seen[-400:]
            seen += os.read(main, 4096)
    until_prompt(1)
    os.write(main, b"help quit\r")
    until_prompt(2)
    os.write(main, b"\x1b[A\r")                         # up arrow: the same command again
    until_prompt(3)
    os.write(main, b"quit\r")
    assert proc.wait(60) == 0
    os.close(main)
    assert seen.count(b"quits the program") == 2, seen.decode(errors="replace")
    assert "help quit" in (tmp_path / ".mbgpu_history").read_text()
