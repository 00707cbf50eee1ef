"""ParsSPR proposal time: bit-plane parsimony vs the per-pattern path, on the simulated sets of
benchmarks/mcmc_gpu.py (DNA 64 x 50k sites, protein 40 x 20k), with a check that both paths propose the same.

    python benchmarks/parsimony.py [--calls 10]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcmc_gpu import CASES, simulate  # noqa: E402

from engine.moves import bitplanes  # noqa: E402
from engine.moves.base import MoveContext  # noqa: E402
from engine.moves.pars_spr import ParsSPR  # noqa: E402
from engine.tree import random_tree  # noqa: E402


def time_path(planes: bool, tree, ctx, calls: int) -> tuple[float, list[float]]:
    """Seconds per ParsSPR proposal and the proposals' log Hastings ratios, with or without bit planes."""
    saved, bitplanes.AVAILABLE = bitplanes.AVAILABLE, planes and bitplanes.AVAILABLE
    try:
        move = ParsSPR()
        move.propose(tree, np.random.default_rng(3), ctx)          # packs the planes once
        rng = np.random.default_rng(3)
        t = time.perf_counter()
        props = [move.propose(tree, rng, ctx) for _ in range(calls)]
        return (time.perf_counter() - t) / calls, [float(p.log_hastings) for p in props]
    finally:
        bitplanes.AVAILABLE = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10)
    a = ap.parse_args(argv)
    for name, case in CASES.items():
        states = simulate(case["n_taxa"], case["n_sites"], case["spec"], seed=5)
        cols, counts = np.unique(states, axis=1, return_counts=True)
        ctx = MoveContext(n_tips=case["n_taxa"], pattern_masks=[(np.uint32(1) << cols.astype(np.uint32),
                                                                  counts.astype(float))])
        tree = random_tree(case["n_taxa"], np.random.default_rng(1))
        slow, a_props = time_path(False, tree, ctx, a.calls)
        fast, b_props = time_path(True, tree, ctx, a.calls)
        print("%-8s %d taxa x %d patterns: per-pattern %.1f ms, bit planes %.1f ms (%.1fx), same proposals: %s"
              % (name, cols.shape[0], cols.shape[1], slow * 1e3, fast * 1e3, slow / fast, a_props == b_props))
    return 0


if __name__ == "__main__":
    sys.exit(main())
