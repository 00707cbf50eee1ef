"""CPU benchmark of the numpy float64 likelihood backend: full-tree lnL evaluations per second.

For DNA (GTR+G4) and protein (WAG+G4) at 1k, 10k and 100k patterns on a random 50-taxon tree
(simulated-looking random tip states), time complete evaluations (transition matrices for every
branch, every internal node's partials with rescaling, the root) and report evaluations/s and
pattern-node updates/s (= internal nodes x patterns x evaluations / s, categories not counted).

    python benchmarks/likelihood_cpu.py [--taxa 50] [--patterns 1000 10000 100000] [--budget 20]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from mbgpu.likelihood import PartitionLikelihood
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

MODELS = {
    "DNA GTR+G4": ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                            statefreqs=(0.3, 0.2, 0.22, 0.28), rates="gamma", alpha=0.5),
    "protein WAG+G4": ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.5),
}


def make_case(spec: ModelSpec, n_taxa: int, n_patterns: int, rng: np.random.Generator):
    model = build_model(spec)
    tree = random_tree(n_taxa, rng, brlen=lambda g, n: g.exponential(0.08, n))
    states = rng.integers(model.n_states, size=(n_taxa, n_patterns))
    tips = np.zeros((n_taxa, n_patterns, model.n_states))
    np.put_along_axis(tips, states[..., None], 1.0, axis=2)
    part = PartitionLikelihood(tips, np.ones(n_patterns), model, double_buffer=False)
    return part, tree


def time_case(part: PartitionLikelihood, tree, budget_s: float) -> tuple[float, int]:
    """Seconds per evaluation (median of repeated timings within the budget) and evaluations done."""
    part.log_likelihood(tree)                       # warm-up
    times = []
    start = time.perf_counter()
    while not times or (time.perf_counter() - start < budget_s and len(times) < 200):
        t0 = time.perf_counter()
        part.log_likelihood(tree)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), len(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--taxa", type=int, default=50)
    ap.add_argument("--patterns", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of timing per case")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print("machine: %s, %d CPUs, numpy %s, python %s" % (platform.processor() or platform.machine(),
          os.cpu_count(), np.__version__, platform.python_version()))
    print("%-15s %9s %6s %12s %14s %18s" % ("model", "patterns", "evals", "s/eval", "evals/s", "pattern-nodes/s"))
    for label, spec in MODELS.items():
        for n_patterns in args.patterns:
            part, tree = make_case(spec, args.taxa, n_patterns, rng)
            per_eval, n = time_case(part, tree, args.budget)
            n_internal = tree.n_nodes - tree.n_tips
            print("%-15s %9d %6d %12.5f %14.2f %18.3e" % (label, n_patterns, n, per_eval, 1.0 / per_eval,
                  n_internal * n_patterns / per_eval), flush=True)
            del part
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
