"""A command-line session: run the given files in order, then optionally the interactive prompt."""
from __future__ import annotations

import os
import sys

from mbgpu.console import Console
from mbgpu.errors import MbgpuError, Quit
from mbgpu.interpreter import Interpreter

PROMPT = "mbgpu > "


BACKENDS = ("auto", "cpu", "gpu")


def _parse_args(argv: list[str]) -> tuple[bool, list[str], str | None]:
    """(interactive, files, `--backend=` value or None)."""
    interactive, files, backend = False, [], None
    for a in argv:
        if a == "-i":
            interactive = True
        elif a.startswith("--backend="):
            backend = a.split("=", 1)[1].lower()
            if backend not in BACKENDS:
                raise MbgpuError("--backend must be auto, cpu or gpu, not '%s'" % backend)
        elif a.startswith("-") and a != "-":
            raise MbgpuError("unknown option '%s' (see mbgpu -h)" % a)
        else:
            files.append(a)
    return interactive or not files, files, backend


def _set_backend(interp: Interpreter, value: str) -> None:
    """`--backend=VALUE` is `set backend=VALUE` before the first file (a later `set backend=` wins)."""
    param = next(p for p in interp.table["set"].params if p.name == "Backend")
    interp.settings.options["Backend"] = next(c for c in param.choices if c.lower() == value)


def _report(err: MbgpuError) -> None:
    sys.stdout.flush()
    print(err.one_line(), file=sys.stderr)


def _line_reader(stdin):
    """A function returning the next line ('' at the end). At a terminal it is `input()` with line
    editing and a history kept in ~/.mbgpu_history where Python has readline; elsewhere plain reads."""
    if not (stdin is sys.stdin and stdin.isatty()):
        return stdin.readline, lambda: None
    try:
        import readline
    except ImportError:                      # e.g. Windows without pyreadline: no editing, still a prompt
        readline = None
    history = os.path.expanduser("~/.mbgpu_history")
    if readline is not None:
        try:
            readline.read_history_file(history)
        except OSError:
            pass

    def read() -> str:
        try:
            return input(PROMPT) + "\n"
        except EOFError:
            sys.stdout.write("\n")
            return ""

    def save() -> None:
        if readline is not None:
            try:
                readline.set_history_length(1000)
                readline.write_history_file(history)
            except OSError:
                pass
    return read, save


ASK_TRIES = 10


def terminal_question(read, write):
    """MrBayes' WantTo over `read()`/`write(text)`: `   QUESTION? (yes/no): ` until a yes or a no (ten tries);
    no answer (end of input) counts as a no, with MrBayes' note."""
    def ask(question: str) -> bool:
        for _ in range(ASK_TRIES):
            write("\n   %s? (yes/no): " % question)
            answer = read()
            if not answer:
                write("   Failed to retrieve answer; will take that as a no\n")
                return False
            word = answer.strip().lower()
            if word in ("yes", "y", "no", "n"):
                return word.startswith("y")
            write("   Enter yes or no\n")
        return False
    return ask


def _ask_for(interactive: bool, stdin):
    """Interpreter.ask: a question at the terminal in an interactive session whose input is a terminal;
    None otherwise (batch files and piped input are never asked anything)."""
    try:
        tty = interactive and stdin is not None and stdin.isatty()
    except (ValueError, OSError):        # a closed or detached stdin
        tty = False
    if not tty:
        return None

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()
    return terminal_question(stdin.readline, write)


def prompt_loop(interp: Interpreter, stdin=None) -> int:
    """Read commands line by line until `quit` or end of input; errors stop only with quitonerror."""
    read, save = _line_reader(stdin or sys.stdin)
    try:
        return _loop(interp, read)
    finally:
        save()


def _loop(interp: Interpreter, read) -> int:
    n = 0
    while True:
        line = read()
        if not line:
            return 0
        n += 1
        text = line.strip()
        if not text:
            continue
        if not text.rstrip().endswith(";"):
            text += ";"
        try:
            interp.run_text("\n" * (n - 1) + text, "<stdin>")   # errors name the line typed: <stdin>:n:col
        except Quit:
            return 0
        except MbgpuError as err:
            _report(err)
            if interp.settings.options.get("Quitonerror") == "Yes":
                return 2


def run_cli(argv: list[str]) -> int:
    """`mbgpu [-i] [FILE ...]`: the exit status (0, or 2 after a user error)."""
    interactive, files, backend = _parse_args(argv)
    interp = Interpreter(Console())
    interp.ask = _ask_for(interactive, sys.stdin)
    if backend is not None:
        _set_backend(interp, backend)
    try:
        for path in files:
            interp.run_file(path)
    except Quit:
        return 0
    except MbgpuError as err:
        _report(err)
        if not interactive or interp.settings.options.get("Quitonerror") == "Yes":
            return 2
    finally:
        if not interactive:
            interp.console.stop_log()
    if interactive:
        try:
            return prompt_loop(interp)
        finally:
            interp.console.stop_log()
    return 0
