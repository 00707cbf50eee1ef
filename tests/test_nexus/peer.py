"""Run the real MrBayes 3.2.7a (the `mb` fixture) and mbgpu side by side on the same NEXUS text."""
import io
import re
import subprocess

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter


def run_mb(mb, folder, name: str, text: str) -> subprocess.CompletedProcess:
    """Write `text` to folder/name and run `mb` on it there (batch mode; exit status 1 on an error)."""
    (folder / name).write_text(text)
    return subprocess.run([str(mb), name], cwd=folder, capture_output=True, text=True, timeout=120)


def run_mbgpu(folder, name: str, text: str, monkeypatch) -> tuple[Interpreter, str]:
    """Write `text` to folder/name and execute it with mbgpu there; returns the interpreter and its screen."""
    (folder / name).write_text(text)
    monkeypatch.chdir(folder)
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(folder / name))
    return it, it.console.stream.getvalue()


def gen0_lnl(pfile) -> float:
    """LnL of the Gen-0 row of a .p file."""
    lines = pfile.read_text().splitlines()
    header, row = lines[1].split("\t"), lines[2].split("\t")
    assert row[0] == "0", lines[:3]
    return float(row[header.index("LnL")])


def number(pattern: str, screen: str) -> int:
    """The integer that `pattern`'s group 1 finds on the screen (exactly one match)."""
    found = re.findall(pattern, screen)
    assert len(found) == 1, (pattern, found)
    return int(found[0])
