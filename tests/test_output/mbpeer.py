"""Run the same mrbayes block through MrBayes (the `mb` fixture) and through mbgpu, in one folder.

MrBayes 3.2.7a skips commands on the line of an `execute`: blocks start a new line after it.
"""
import io
import shutil
import subprocess

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter


def stage(folder, *data):
    """Copy data files (Paths) into `folder`; blocks refer to them by name."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in data:
        shutil.copy(path, folder / path.name)
    return folder


def run_mb(mb, folder, block: str, name: str = "mb.nex") -> str:
    """MrBayes' screen output of `block` (commands between `begin mrbayes;` and `end;`)."""
    (folder / name).write_text("#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes;\n%s\nend;\n" % block)
    r = subprocess.run([str(mb), name], cwd=folder, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:]
    return r.stdout


def run_ours(folder, block: str, monkeypatch, name: str = "us.nex") -> str:
    """mbgpu's screen output of `block`, run with `folder` as the working directory."""
    monkeypatch.chdir(folder)
    (folder / name).write_text("#NEXUS\nbegin mrbayes;\n%s\nend;\n" % block)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / name))
    return out.getvalue()


def p_header(path) -> list[str]:
    return path.read_text().splitlines()[1].split("\t")


def model_block(text: str, spacer: int = 0) -> list[str]:
    """The model summary printed at mcmc start: 'Model settings:' up to the move list (MrBayes) or the
    pattern report (mbgpu), trailing spaces and blank lines removed, MrBayes' file-level spacer cut."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "Model settings:")
    end = next(i for i in range(start, len(lines)) if lines[i].strip().startswith(
        ("The MCMC sampler will use", "Compressing data matrix")))
    block = [l.rstrip() for l in lines[start:end]]
    while block and not block[-1]:
        block.pop()
    assert all(not l or l.startswith(" " * spacer) for l in block)
    return [l[spacer:] for l in block]


def move_block(text: str, spacer: int = 0) -> list[str]:
    """'The MCMC sampler will use the following moves:' and its rows, MrBayes' file-level spacer cut."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.strip() == "The MCMC sampler will use the following moves:")
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    return [l.rstrip()[spacer:] for l in lines[start:end]]
