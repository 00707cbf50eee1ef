"""Time the core's compiled likelihood (mbgpu.core.division.DivisionArrays.evaluate) for 8 chains:
one branch changed per chain (the path above it recomputed), and every node (a new model).

    .venv/bin/python benchmarks/core_evaluate.py [--data PATH.nex] [--reps 2000]     (default: primates)
"""
from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbgpu.core import trees as T            # noqa: E402
from mbgpu.core.division import DivisionArrays  # noqa: E402
from tests.test_core.build import build_chains  # noqa: E402


def _time(fn, reps):
    fn()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps)
    return best * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT / "tests" / "data" / "primates.nex"), help="a NEXUS data file")
    ap.add_argument("--reps", type=int, default=2000)
    a = ap.parse_args(argv)
    tmp = pathlib.Path(tempfile.mkdtemp())
    chains, _p, _s = build_chains(tmp, "execute %s;\nlset nst=6 rates=invgamma;" % os.path.abspath(a.data), nruns=int(os.environ.get("NRUNS", 2)), nchains=int(os.environ.get("NCHAINS", 4)))
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DivisionArrays(chains[0].parts[0].inc.shared, [ch.parts[0].inc for ch in chains])
    div.refresh(trees)
    n_tips = trees.parent.shape[1] // 2 + 1
    leaf = np.arange(len(chains)) % n_tips          # one tip branch per chain: its path to the root
    def one_branch():
        trees.brlen_p[np.arange(len(chains)), leaf] *= 1.0000001
        div.todo[:] = 1
        div.evaluate(trees)
    def full():
        div.todo[:] = 2
        div.evaluate(trees)
    print("patterns %d, threads %s" % (div.weights.size, os.environ.get("NUMBA_NUM_THREADS", "?")))
    print("one branch (all chains): %8.1f us" % _time(one_branch, a.reps))
    print("every node (all chains): %8.1f us" % _time(full, max(a.reps // 5, 10)))
    print("lnL", div.lnl_p[:2])


if __name__ == "__main__":
    main()
