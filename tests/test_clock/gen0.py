"""Run mb-double on the primates data under JC with fixed equal frequencies from a fixed rooted start
tree (`startvals tau=t1 v=t1`, one generation) and read its Gen-0 row of the .p file, where LnPr holds
only the clock terms (docs/plans/clocks.md §0)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.test_clock.trees import DATA

SETUP = "lset nst=1 rates=equal; prset statefreqpr=fixed(equal);"


def gen0(mb_double: Path, folder: Path, commands: str, newick: str) -> dict:
    """The Gen-0 row of MrBayes' .p file as {column: float} (and 'screen': its output, 'pfile' and 'tfile':
    the .p and .t texts) after `commands` (prset / calibrate / constraint / set / mcmcp lines) from the
    start tree `newick`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text(DATA.read_text())
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=1 swapseed=1; execute primates.nex; end;\n"
        "begin trees; tree t1 = [&R] %s\nend;\n"
        "begin mrbayes; %s %s startvals tau=t1 v=t1;\n"
        "mcmc ngen=1 samplefreq=1 printfreq=1 nchains=1 nruns=1 mcmcdiagn=no checkpoint=no filename=x;\nend;\n"
        % (newick, SETUP, commands))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    lines = (folder / "x.p").read_text().splitlines()
    header = lines[1].split("\t")
    row = next(ln.split("\t") for ln in lines[2:] if ln.split("\t")[0] == "0")
    out = {k: float(v) for k, v in zip(header, row)}
    out["screen"] = done.stdout
    out["pfile"] = (folder / "x.p").read_text()
    out["tfile"] = (folder / "x.t").read_text()
    return out
