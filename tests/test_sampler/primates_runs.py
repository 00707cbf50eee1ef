"""Command files on primates.nex's data for tests that run mbgpu and MrBayes side by side: a trees block,
MrBayes' batch settings, GTR+I+G, the test's commands and one mcmc (files `out.*`)."""
import io
import re

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA


def primates_data() -> str:
    text = (TEST_DATA / "primates.nex").read_text()
    return re.search(r"(?is)begin\s+data\s*;.*?end\s*;", text).group(0)


def write_run(folder, trees: dict, commands: str, mcmc: str, after: str = "") -> None:
    """folder/run.nex: the data, `trees` (name -> Newick), then `commands`, `mcmc ...` and `after`."""
    folder.mkdir(exist_ok=True)
    block = "".join("  tree %s = %s\n" % kv for kv in trees.items())
    (folder / "run.nex").write_text(
        "#NEXUS\n%s\nbegin trees;\n%send;\nbegin mrbayes;\n"
        "  set autoclose=yes nowarn=yes quitonerror=yes seed=3 swapseed=4 precision=15 scientific=no;\n"
        "  lset nst=6 rates=invgamma;\n  %s\n  mcmc %s filename=out;\n  %s\nend;\n"
        % (primates_data(), block, commands, mcmc, after))


def run_mbgpu(folder) -> str:
    """Execute folder/run.nex (the caller has made folder the working directory); the screen output."""
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    return out.getvalue()


def gen0(pfile) -> dict:
    """The Gen-0 row of a .p file as {column: text}."""
    lines = pfile.read_text().splitlines()
    return dict(zip(lines[1].split("\t"), lines[2].split("\t")))
