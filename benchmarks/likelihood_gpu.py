"""Likelihood throughput, CUDA backend vs numpy backend in one run: full-tree evaluations/s and
'generations'/s of 8 chains (a branch-length proposal per chain: its matrix and the partials of the
touched nodes up to the root in the inactive slots, cumulative scale, root; accept or reject).

CUDA runs a generation as batched calls (one matrix launch for all chains, one launch per level of
all chains' operations, one scale launch, one root launch); numpy runs the same protocol calls chain
by chain. Both see the same proposals and their log likelihoods are compared at the end.

    python3 benchmarks/likelihood_gpu.py [--budget 10] [--chains 8] [--precision double]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mbgpu.cuda.batch import ChainSlots
from mbgpu.likelihood import NumpyBackend
from mbgpu.models import ModelSpec, build_model
from mbgpu.tree import random_tree

CASES = {
    "DNA 64 x 50k GTR+I+G4": (64, 50_000, ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                                                     statefreqs=(0.3, 0.2, 0.22, 0.28), rates="invgamma",
                                                     alpha=0.5, pinvar=0.2)),
    "protein 40 x 20k WAG+G4": (40, 20_000, ModelSpec(datatype="protein", aamodel="wag", rates="gamma",
                                                      alpha=0.5)),
}


class Chains:
    """n chains of one partition in one backend instance, driven through the protocol.

    Matrix slots (`mact`) and partial/scale slots (`pact`) are double-buffered per node: a proposal
    writes the inactive slots of what it touches and flips them; a rejection flips them back.
    """

    def __init__(self, backend, cs: ChainSlots, model, trees, batched: bool):
        self.b, self.cs, self.model, self.batched = backend, cs, model, batched
        self.trees = [t.copy() for t in trees]
        self.kids = [t.children() for t in self.trees]
        self.mact = [np.zeros(t.n_nodes, dtype=np.int64) for t in self.trees]
        self.pact = [np.zeros(t.n_nodes, dtype=np.int64) for t in self.trees]
        self.cum = [0] * len(trees)

    def _ops(self, k, nodes):
        """Operations computing `nodes` (children before parents) of chain k into their active slots."""
        cs, pa, ma, kids = self.cs, self.pact[k], self.mact[k], self.kids[k]
        rows = []
        for v in nodes:
            a, b = kids[v][0], kids[v][1]
            rows.append((cs.buffer(k, v, pa[v]), cs.scale(k, v, pa[v]), -1, cs.buffer(k, a, pa[a]),
                         cs.matrix(k, a, ma[a]), cs.buffer(k, b, pa[b]), cs.matrix(k, b, ma[b])))
        return np.array(rows, dtype=np.int64).reshape(-1, 7)

    def _finish(self, k):
        """The scale job (cumulative = sum of every internal node's active scale) and the root call."""
        tree, pa, ma, cs = self.trees[k], self.pact[k], self.mact[k], self.cs
        scales = [cs.scale(k, v, pa[v]) for v in range(tree.n_tips, tree.n_nodes)]
        third = self.kids[k][tree.root][2]
        cum = cs.cumulative_scale(k, self.cum[k])
        call = (cs.buffer(k, tree.root, pa[tree.root]), self.model.frequencies, self.model.category_weights,
                self.model.pinvar, cum, cs.buffer(k, third, pa[third]), cs.matrix(k, third, ma[third]))
        return (cum, True, scales, 1), call

    def _run(self, matrix_groups, op_blocks, finishes):
        m = self.model
        if self.batched:
            self.b.update_transition_matrices_many([(m.eigen, m.category_rates, i, t) for i, t in matrix_groups])
            self.b.update_partials(np.concatenate(op_blocks))
            self.b.scale_jobs([f[0] for f in finishes])
            return self.b.root_log_likelihoods([f[1] for f in finishes])
        out = []
        for (idx, t), ops, (job, call) in zip(matrix_groups, op_blocks, finishes):
            self.b.update_transition_matrices(m.eigen, np.asarray(idx), np.asarray(t))
            self.b.update_partials(ops)
            self.b.reset_scale(job[0])
            self.b.accumulate_scale(job[0], np.asarray(job[2]))
            out.append(self.b.root_log_likelihood(*call))
        return out

    def full(self):
        """Every chain's full evaluation."""
        groups, blocks, fin = [], [], []
        for k, tree in enumerate(self.trees):
            nodes = np.flatnonzero(tree.parent >= 0)
            groups.append(([self.cs.matrix(k, v, self.mact[k][v]) for v in nodes], tree.brlen[nodes]))
            blocks.append(self._ops(k, [v for v in tree.postorder().tolist() if v >= tree.n_tips]))
            fin.append(self._finish(k))
        return self._run(groups, blocks, fin)

    def generation(self, rng):
        """One branch-length proposal per chain; accept with probability 1/2 (flip back on reject)."""
        groups, blocks, fin, undo = [], [], [], []
        for k, tree in enumerate(self.trees):
            v = int(rng.integers(tree.n_nodes - 1))
            v = v if v < tree.root else v + 1
            old = float(tree.brlen[v])
            tree.brlen[v] = old * float(np.exp(rng.uniform(-0.2, 0.2)))
            path, u = [], int(tree.parent[v])
            while u >= 0:
                path.append(u)
                u = int(tree.parent[u])
            self.mact[k][v] ^= 1
            self.pact[k][path] ^= 1
            self.cum[k] ^= 1
            undo.append((v, path, old))
            groups.append(([self.cs.matrix(k, v, self.mact[k][v])], [tree.brlen[v]]))
            blocks.append(self._ops(k, path))
            fin.append(self._finish(k))
        lnl = self._run(groups, blocks, fin)
        for k, (v, path, old) in enumerate(undo):
            if rng.random() < 0.5:                   # reject: flip the slots back, restore the length
                self.mact[k][v] ^= 1
                self.pact[k][path] ^= 1
                self.cum[k] ^= 1
                self.trees[k].brlen[v] = old
        return lnl, float(np.mean([len(p) for _, p, _ in undo]))


def make_backends(n_taxa, n_patterns, spec, n_chains, precision, rng):
    from mbgpu.cuda.backend import CudaBackend

    model = build_model(spec)
    cs = ChainSlots(n_taxa, n_chains)
    ispec = cs.instance_spec(n_patterns, model.n_states, model.n_categories)
    gpu = CudaBackend(ispec, precision=precision, chains=n_chains)
    cpu = NumpyBackend(ispec)
    states = rng.integers(0, model.n_states, size=(n_taxa, n_patterns))
    for b in (gpu, cpu):
        b.set_category_rates(model.category_rates)
        for t in range(n_taxa):
            b.set_tip_states(t, states[t])
    trees = [random_tree(n_taxa, rng, brlen=lambda g, n: g.exponential(0.05, n)) for _ in range(n_chains)]
    return model, cs, gpu, cpu, trees


def rate(fn, budget: float, at_least: int = 2) -> float:
    """Calls per second of fn() within about `budget` seconds."""
    fn()
    n, start = 0, time.perf_counter()
    while n < at_least or time.perf_counter() - start < budget:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=8.0, help="seconds per timed loop")
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--precision", default="double", choices=("double", "single"))
    args = ap.parse_args(argv)
    print("%-26s %-7s %12s %14s %12s %9s" % ("case", "backend", "full evals/s", "generations/s", "nodes/gen",
                                           "speed-up"))
    for label, (n_taxa, n_patterns, spec) in CASES.items():
        rng = np.random.default_rng(7)
        model, cs, gpu, cpu, trees = make_backends(n_taxa, n_patterns, spec, args.chains, args.precision, rng)
        drivers = {"cuda": Chains(gpu, cs, model, trees, True), "numpy": Chains(cpu, cs, model, trees, False)}
        check = {name: Chains(d.b, cs, model, trees, d.batched) for name, d in drivers.items()}
        first = {name: np.array(c.full()) for name, c in check.items()}
        seeds = {name: np.random.default_rng(99) for name in check}
        after = {name: np.array([c.generation(seeds[name])[0] for _ in range(6)]) for name, c in check.items()}
        start_diff = float(np.max(np.abs(first["cuda"] / first["numpy"] - 1)))
        diff = float(np.max(np.abs(after["cuda"] / after["numpy"] - 1)))
        rates = {}
        for name, d in drivers.items():
            one = Chains(d.b, cs, model, trees[:1], d.batched)
            full = rate(one.full, args.budget / 2)
            d.full()
            g_rng = np.random.default_rng(11)
            nodes = []
            gens = rate(lambda: nodes.append(d.generation(g_rng)[1]), args.budget)
            rates[name] = (full, gens, float(np.mean(nodes)))
        for name in ("cuda", "numpy"):
            full, gens, nodes = rates[name]
            print("%-26s %-7s %12.1f %14.1f %12.1f %9s" % (label, name, full, gens, nodes,
                  "%.0fx" % (gens / rates["numpy"][1]) if name == "cuda" else ""), flush=True)
        print("  %d chains; lnL agreement cuda vs numpy: full %.1e, after proposals %.1e (relative)"
              % (args.chains, start_diff, diff))
        del drivers, gpu, cpu
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
