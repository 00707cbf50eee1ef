"""MrBayes' question before overwriting an earlier run's files: only in an interactive session with
`set nowarnings=no`; a no keeps the files, a yes (or batch mode) overwrites them."""
import io
import os
import subprocess
import sys

import pytest

from mbgpu.console import Console
from mbgpu.errors import OutputError
from mbgpu.interpreter import Interpreter
from mbgpu.session import _ask_for, terminal_question
from tests.test_checkpoint.common import PRIMATES, hashes

MCMC = "mcmc ngen=20 nruns=1 nchains=1 samplefreq=10 printfreq=10 diagnfreq=10 filename=r;"


def session(tmp_path, monkeypatch, answers: list | None):
    """An Interpreter in `tmp_path` whose questions are answered from `answers` (None: batch, no questions)."""
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    interp = Interpreter(Console(out))
    asked = []
    if answers is not None:
        interp.ask = lambda q: asked.append(q) or answers.pop(0)
    interp.run_text("set seed=1; execute %s;" % PRIMATES)
    return interp, out, asked


def earlier_run(tmp_path):
    (tmp_path / "r.p").write_text("[ID: 1]\nold\n")


def test_no_keeps_the_earlier_files(tmp_path, monkeypatch):
    earlier_run(tmp_path)
    interp, out, asked = session(tmp_path, monkeypatch, [False])
    before = hashes(tmp_path)
    with pytest.raises(OutputError, match="files of a previous run with the prefix 'r' were kept"):
        interp.run_text(MCMC)
    assert asked == ["Do you want to overwrite these results"]
    assert "There are results from a previous run saved using the same filename(s)." in out.getvalue()
    assert hashes(tmp_path) == before and not (tmp_path / "r.lock").exists()


def test_yes_overwrites_and_sets_nowarnings(tmp_path, monkeypatch):
    earlier_run(tmp_path)
    interp, _, asked = session(tmp_path, monkeypatch, [True])
    interp.run_text(MCMC)
    assert len(asked) == 1 and "old" not in (tmp_path / "r.p").read_text()
    assert interp.settings.options["Nowarnings"] == "Yes"
    interp.run_text(MCMC)
    assert len(asked) == 1, "MrBayes asks once: a yes sets nowarnings=yes"


@pytest.mark.parametrize("setting, answers", [("set nowarnings=yes;", []), ("", None)])
def test_no_question_with_nowarnings_or_in_batch(tmp_path, monkeypatch, setting, answers):
    earlier_run(tmp_path)
    interp, _, asked = session(tmp_path, monkeypatch, answers)
    interp.run_text(setting + MCMC)
    assert asked == [] and "old" not in (tmp_path / "r.p").read_text()


def test_no_question_without_earlier_results(tmp_path, monkeypatch):
    interp, _, asked = session(tmp_path, monkeypatch, [])
    interp.run_text(MCMC)
    assert asked == [] and (tmp_path / "r.p").exists()


def test_terminal_question_reads_yes_or_no():
    shown = []
    answers = iter(["maybe\n", "YES\n"])
    assert terminal_question(lambda: next(answers), shown.append)("Overwrite") is True
    assert shown[0] == "\n   Overwrite? (yes/no): " and "Enter yes or no" in shown[1]
    assert terminal_question(lambda: "", shown.append)("Overwrite") is False
    assert shown[-1] == "   Failed to retrieve answer; will take that as a no\n"


def test_batch_and_piped_sessions_never_ask():
    assert _ask_for(False, sys.stdin) is None
    assert _ask_for(True, io.StringIO("yes\n")) is None


def test_question_at_a_terminal(tmp_path):
    """`mbgpu` at a terminal: an mcmc over an earlier run's files asks; `no` keeps them, the prompt goes on."""
    pty = pytest.importorskip("pty")
    import select

    earlier_run(tmp_path)
    main, child = pty.openpty()
    env = dict(os.environ, HOME=str(tmp_path), TERM="xterm", NUMBA_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "mbgpu"], stdin=child, stdout=child, stderr=child, env=env,
                            cwd=tmp_path)
    os.close(child)
    seen = b""

    def until(text: bytes, count: int = 1) -> None:
        nonlocal seen
        while seen.count(text) < count:
            ready, _, _ = select.select([main], [], [], 60)
            assert ready, "no %r within 60 s; screen: %r" % (text, seen[-400:])
            seen += os.read(main, 4096)
    until(b"mbgpu > ")
    os.write(main, b"set seed=1; execute %s; %s\r" % (str(PRIMATES).encode(), MCMC.encode()))
    until(b"Do you want to overwrite these results? (yes/no): ")
    os.write(main, b"no\r")
    until(b"mbgpu > ", 2)
    os.write(main, b"quit\r")
    assert proc.wait(60) == 0
    os.close(main)
    assert b"error: mcmc stopped: the files of a previous run" in seen, seen.decode(errors="replace")
    assert (tmp_path / "r.p").read_text() == "[ID: 1]\nold\n"
