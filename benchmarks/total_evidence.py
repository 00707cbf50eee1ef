"""The total-evidence subset of tests/test_clock/test_total_evidence.py (22 Hymenoptera of hymfossil.nex:
six Mkv standard pattern sets and 28S, FBD, IGR clock; 1 run x 1 chain), mbgpu and MrBayes 3.2.7a on the
same file, alternating over rounds: wall seconds of each whole command (start-up included).

    NUMBA_NUM_THREADS=1 taskset -c 1 python benchmarks/total_evidence.py [--ngen 100000] [--rounds 2]
        [--data ../shared/data/mrbayes/hymfossil.nex] [--mb ../shared/peers/bin/mb]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hymfossil_subset import n_morphology, subset                      # noqa: E402
from tests.test_clock.test_total_evidence import FOSSILS, commands          # noqa: E402
from tests.test_sampler.test_mkv_posterior import TAXA                      # noqa: E402


def timed(cmd: list, folder: Path) -> float:
    t = time.perf_counter()
    subprocess.run(cmd + ["run.nex"], cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ngen", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "mrbayes" / "hymfossil.nex"))
    ap.add_argument("--mb", default=str(ROOT.parent / "shared" / "peers" / "bin" / "mb"))
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="te_"))
    data = subset(args.data, TAXA + tuple(FOSSILS), "28S")
    k = n_morphology(data)
    (folder / "te.nex").write_text(data)
    (folder / "run.nex").write_text(commands(1, k, k + 552, args.ngen))
    timed([sys.executable, "-m", "mbgpu"], folder)                   # warm-up: numba's cache
    print("round  mbgpu s  MrBayes s  ratio")
    for r in range(1, args.rounds + 1):
        ours, theirs = timed([sys.executable, "-m", "mbgpu"], folder), timed([args.mb], folder)
        print("%5d  %7.1f  %9.1f  %5.2fx" % (r, ours, theirs, theirs / ours))


if __name__ == "__main__":
    main()
