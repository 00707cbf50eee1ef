"""MrBayes' total-evidence dating example, side by side: generations/s of hymfossil.nex as its authors set it
up (114 taxa, 353 morphological characters under Mkv + gamma and 7 unlinked partitions, FBD with diversity
sampling, an IGR clock, 45 dated fossils, constraints; nruns=4 nchains=4 temp=0.07), mbgpu and MrBayes
3.2.7a alternating over rounds.

Each program runs a short and a long analysis in fresh processes; the rate is the difference in generations
over the difference in wall time, so start-up cancels. `--mb` names MrBayes (`mb`; `--beagle-gpu` adds `set
usebeagle=yes beagledevice=gpu` to its run, MrBayes + BEAGLE's CUDA plugin).

    python benchmarks/hymfossil.py [--data ../shared/data/mrbayes/hymfossil.nex] [--short 200] [--long 1200]
                                   [--rounds 2] [--backend cpu|gpu] [--mb ../shared/peers/bin/mb] [--beagle-gpu]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mrbayes" / "hymfossil.nex"


def command_file(data: Path, ngen: int, extra: str = "") -> str:
    """hymfossil.nex with an `mcmc` of `ngen` generations in place of its commented checkpoint line."""
    text = data.read_text()
    run = ("%s set seed=7 swapseed=8; mcmc ngen=%d printfreq=100 samplefreq=100 diagnfreq=%d checkpoint=no "
           "filename=hf;" % (extra, ngen, ngen))
    assert "[exe hym.ckp;]" in text, "not MrBayes' hymfossil.nex"
    return text.replace("[exe hym.ckp;]", run)


def timed(cmd: list, folder: Path, data: Path, ngen: int, extra: str) -> float:
    (folder / "run.nex").write_text(command_file(data, ngen, extra))
    t = time.perf_counter()
    subprocess.run(cmd + ["run.nex"], cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def rate(cmd: list, folder: Path, data: Path, short: int, long: int, extra: str = "") -> float:
    return (long - short) / (timed(cmd, folder, data, long, extra) - timed(cmd, folder, data, short, extra))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--short", type=int, default=200)
    ap.add_argument("--long", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--mb", default=str(ROOT.parent / "shared" / "peers" / "bin" / "mb"))
    ap.add_argument("--beagle-gpu", action="store_true", help="MrBayes with BEAGLE on the GPU")
    a = ap.parse_args(argv)
    data, folder = Path(a.data).resolve(), Path(tempfile.mkdtemp(prefix="mbgpu_hymfossil_"))
    ours, theirs = [sys.executable, "-m", "mbgpu", "--backend=%s" % a.backend], [a.mb]
    mb_extra = "set usebeagle=yes beagledevice=gpu;" if a.beagle_gpu else ""
    try:
        timed(ours, folder, data, 10, "")                           # numba's first compile
        got = {"mbgpu": [], "MrBayes": []}
        for _ in range(a.rounds):
            got["mbgpu"].append(rate(ours, folder, data, a.short, a.long))
            got["MrBayes"].append(rate(theirs, folder, data, a.short, a.long, mb_extra))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("hymfossil.nex (114 taxa, Mkv+G morphology + 6 DNA partitions, FBD, IGR), nruns=4 nchains=4; mbgpu %s, "
          "MrBayes %s" % (a.backend, "BEAGLE GPU" if a.beagle_gpu else "CPU"))
    for who, rates in got.items():
        print("  %-8s %s gen/s" % (who, "  ".join("%.1f" % r for r in rates)))
    print("  mbgpu / MrBayes (best rounds): %.2f" % (max(got["mbgpu"]) / max(got["MrBayes"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
