"""An old source tree of mbgpu against the installed one on a whole analysis (host_ab.py times only the
host harness), in alternating rounds, on a fixed number of numba threads.

    mkdir -p /tmp/old && git archive e432189 engine cuda mpi | tar -x -C /tmp/old
    python3 benchmarks/tree_ab.py --old /tmp/old --data dna50x2k --runs 2 --chains 4 --threads 8 --rounds 5

The old tree runs from PYTHONPATH (benchmarks/source_tree.py), so it keeps its own numba cache folder. Both caches are warmed at once before the rounds. Rates are
(long - short generations) / (long - short wall seconds), as in mpirun_bound.py.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mpirun_bound  # noqa: E402
import peers  # noqa: E402
import source_tree  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True, help="a tree with engine/, cuda/ and mpi/ of the old commit")
    ap.add_argument("--data", default="primates", choices=sorted(peers.DATASETS))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ngen", type=int, nargs=2, default=None, metavar=("SHORT", "LONG"))
    args = ap.parse_args()
    ngen = tuple(args.ngen or ((4000, 24000) if args.data == "primates" else (400, 2400)))
    with tempfile.TemporaryDirectory(prefix="mbgpu-tree-ab-") as folder:
        data = peers.prepare_data(args.data, os.path.join(folder, "data"))
        old_path = source_tree.import_path(args.old)
        envs = {}
        for tag in ("old", "new"):
            e = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
            if tag == "old":
                e["PYTHONPATH"] = old_path + os.pathsep + e.get("PYTHONPATH", "")
            envs[tag] = e

        def command(tag, g):
            return [sys.executable, "-m", "mbgpu", "--backend=cpu",
                    mpirun_bound.nexus(data, folder, tag, g, args.runs, args.chains, False)]

        warm = [subprocess.Popen(command(t, 200), env=envs[t], cwd=folder, stdout=subprocess.DEVNULL) for t in envs]
        for p in warm:
            p.wait()
        got = {"old": [], "new": []}
        for r in range(args.rounds):
            for tag in (("old", "new") if r % 2 == 0 else ("new", "old")):
                got[tag].append(mpirun_bound.rate(lambda g: mpirun_bound.wall([command(tag, g)], envs[tag], folder),
                                                  ngen))
                print("round %d %s %.0f gen/s" % (r + 1, tag, got[tag][-1]), file=sys.stderr, flush=True)
    for tag, rates in got.items():
        print("%s: median %.0f gen/s (%s)" % (tag, statistics.median(rates), ", ".join("%.0f" % x for x in rates)))


if __name__ == "__main__":
    main()
