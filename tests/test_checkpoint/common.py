"""Shared helpers of the checkpoint tests: run a NEXUS block in a folder, hash every file there."""
import hashlib
import io

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA

PRIMATES = TEST_DATA / "primates.nex"
OUTPUTS = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")
MODEL = "lset nst=6 rates=invgamma;"
MCMC = "nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=60 tunefreq=25 filename=r"


def block(ngen: int, extra: str = "", model: str = MODEL, data=PRIMATES, mcmc: str = MCMC) -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=3 swapseed=4; execute %s;\n %s\n mcmc ngen=%d %s %s; end;\n"
            % (data, model, ngen, mcmc, extra))


def run_text(folder, text: str, monkeypatch, name: str = "run.nex") -> str:
    """Run `text` as a file in `folder` (the working directory, where the outputs go); the screen text."""
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / name).write_text(text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / name))
    return out.getvalue()


def hashes(folder) -> dict:
    """sha256 and mtime of every file in `folder`: to prove nothing was modified."""
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir()) if p.is_file()}


def same_outputs(a, b, names=OUTPUTS) -> list:
    """Names of the output files that differ between folders a and b ([] when all are byte-identical)."""
    return [n for n in names if (a / n).read_bytes() != (b / n).read_bytes()]


def run_in(folder, text: str, monkeypatch) -> str:
    """Run `text` with `folder` as the working directory, the command file kept outside `folder`."""
    cmd = folder.parent / (folder.name + "_cmd.nex")
    cmd.write_text(text)
    monkeypatch.chdir(folder)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(cmd))
    return out.getvalue()
