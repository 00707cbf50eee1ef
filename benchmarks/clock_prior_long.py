"""Long prior sampling (`mcmc data=no`; --data: the posterior) of a clock tree by mbgpu and MrBayes, several seeds
each, in parallel: column means (tree height and length by default) with batch-means errors, per seed and pooled. Not a timing: a convergence
check for cases too slow to mix in a unit test (docs/plans/clocks-integration.md, "fixed tip dates").

The default case: primates (tests/data/primates.nex), uniform clock prior, a fixed date on Tarsius and a
uniform one on Lemur, start tree tests/test_clock/trees.T4.

    python benchmarks/clock_prior_long.py --mb ../shared/peers/bin/mb-double [--ngen 1000000] [--seeds 4]
"""
from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "primates.nex"
T4 = ("((((((((Homo_sapiens:0.05,Pan:0.05):0.02,Gorilla:0.07):0.05,Pongo:0.12):0.06,Hylobates:0.18):0.04,"
      "(((Macaca_fuscata:0.03,M_mulatta:0.03):0.03,M_fascicularis:0.06):0.04,M_sylvanus:0.1):0.12):0.18,"
      "Saimiri_sciureus:0.4):0.15,Lemur_catta:0.5):0.1,Tarsius_syrichta:0.55);")
CASE = ("lset nst=1 rates=equal; prset statefreqpr=fixed(equal) brlenspr=clock:uniform nodeagepr=calibrated "
        "clockratepr=fixed(1); calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.02,0.08);")


def command_file(seed: int, ngen: int, case: str, data: bool = False, start: str = T4) -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=%d swapseed=%d; execute primates.nex; end;\n"
            "begin trees; tree t1 = [&R] %s\nend;\nbegin mrbayes; mcmcp nchains=1; %s startvals tau=t1 v=t1;\n"
            "mcmc ngen=%d samplefreq=100 printfreq=%d nruns=1 mcmcdiagn=no checkpoint=no %sfilename=x;\n"
            "end;\n" % (seed, seed, start, case, ngen, ngen, "" if data else "data=no "))


def run_one(cmd: list, folder: Path, seed: int, ngen: int, case: str, data: bool, start: str) -> dict:
    folder.mkdir(parents=True)
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "cmd.nex").write_text(command_file(seed, ngen, case, data, start))
    subprocess.run(cmd + ["cmd.nex"], cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lines = (folder / "x.p").read_text().splitlines()[1:]
    rows = np.array([[float(x) for x in ln.split("\t")] for ln in lines[1:]])
    rows = rows[len(rows) // 10:]
    return {h: rows[:, i] for i, h in enumerate(lines[0].split("\t"))}


def batch_se(x: np.ndarray, batches: int = 25) -> float:
    n = len(x) // batches
    return float(x[:n * batches].reshape(batches, n).mean(axis=1).std(ddof=1) / math.sqrt(batches))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", default=str(ROOT.parent / "shared" / "peers" / "bin" / "mb-double"))
    ap.add_argument("--ngen", type=int, default=1000000)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--case", default=CASE)
    ap.add_argument("--data", action="store_true", help="the posterior (with the data) instead of the prior")
    ap.add_argument("--columns", default="TH,TL")
    ap.add_argument("--start", default=T4, help="the rooted start tree (newick; default: T4, dated tips)")
    a = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="mbgpu_clock_prior_"))
    programs = {"MrBayes": [a.mb], "mbgpu": [sys.executable, "-m", "mbgpu", "--backend=cpu"]}
    jobs = [(who, s) for who in programs for s in range(1, a.seeds + 1)]
    try:
        with ThreadPoolExecutor(len(jobs)) as pool:
            got = list(pool.map(lambda j: run_one(programs[j[0]], folder / ("%s%d" % j), j[1], a.ngen, a.case,
                                                  a.data, a.start), jobs))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("case: %s%s\nngen %d, samplefreq 100, 10%% burn-in" % (a.case, " (with data)" if a.data else "", a.ngen))
    for col in a.columns.split(","):
        for who in programs:
            runs = [g[col] for (w, _), g in zip(jobs, got) if w == who]
            per = "  ".join("%.4f+-%.4f" % (r.mean(), batch_se(r)) for r in runs)
            pooled = np.concatenate(runs)
            print("  %-3s %-8s %s   pooled %.4f (seed spread %.4f)" % (col, who, per, pooled.mean(),
                                                                        np.std([r.mean() for r in runs], ddof=1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
