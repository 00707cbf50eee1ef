"""Time the compiled core's likelihood kernels (mbgpu.core.kernels) at a given pattern count, each
called `--inner` times inside one compiled loop (so numba's call overhead does not count).

    .venv/bin/python benchmarks/core_kernels.py --patterns 413 [--states 4] [--cats 4]
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from mbgpu.core import kernels as K
from mbgpu.core.division import transition_matrices


@numba.njit
def _node(n, dest, x1, xs1, m1, x2, xs2, m2, work, largest):
    t = 0
    for _ in range(n):
        t += K.node_update(dest, x1, xs1, m1, x2, xs2, m2, work, largest)
    return t


@numba.njit
def _rescale(n, dest, scale_row, largest):
    for _ in range(n):
        K.rescale(dest, scale_row, largest)


@numba.njit
def _root(n, root, x, xs, m, freqs, cw, work, site):
    for _ in range(n):
        K.root_sites(root, x, xs, m, freqs, cw, work, site)


@numba.njit
def _lnl(n, site, scale, scaled, inv, pinvar, weights, work):
    t = 0.0
    for _ in range(n):
        t += K.weighted_lnl(site, scale, scaled, inv, pinvar, weights, work)
    return t


@numba.njit
def _mats(n, evals, evecs, einv, crates, out):
    for _ in range(n):
        transition_matrices(evals, evecs, einv, crates, 0.1, out)


def _best(fn, inner):
    fn()
    best = float("inf")
    for _ in range(7):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best / inner * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--patterns", type=int, default=413)
    ap.add_argument("--states", type=int, default=4)
    ap.add_argument("--cats", type=int, default=4)
    ap.add_argument("--inner", type=int, default=200)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    k, s, p, n = a.cats, a.states, a.patterns, a.inner
    x1, x2 = rng.random((k, s, p)), rng.random((k, s, p))
    m1, m2 = rng.random((k, s, s)), rng.random((k, s, s))
    dest, work = np.zeros((k, s, p)), np.zeros((2, s, p))
    scale_row, largest, site = np.zeros(p), np.zeros(p), rng.random(p) * 1e-3
    tip = np.zeros((1, s, p))
    tip[0, rng.integers(0, s, p), np.arange(p)] = 1.0
    freqs, cw = np.full(s, 1.0 / s), np.full(k, 1.0 / k)
    inv, weights = rng.random(p) * (rng.random(p) < 0.3), rng.integers(1, 4, p).astype(float)
    q = rng.random((s, s))
    evals, evecs = np.linalg.eig(q + q.T)
    rows = {
        "node_update int-int": lambda: _node(n, dest, x1, 1, m1, x2, 1, m2, work, largest),
        "node_update tip-int": lambda: _node(n, dest, tip, 0, m1, x2, 1, m2, work, largest),
        "rescale (every pattern)": lambda: _rescale(n, dest, scale_row, largest * 0.0 + 1e-30),
        "root_sites": lambda: _root(n, x1, x2, 1, m1, freqs, cw, work, site),
        "weighted_lnl +I": lambda: _lnl(n, site, scale_row, False, inv, 0.2, weights, work),
        "weighted_lnl": lambda: _lnl(n, site, scale_row, False, inv, 0.0, weights, work),
        "transition_matrices": lambda: _mats(n, evals, evecs, np.linalg.inv(evecs), np.ones(k), m1),
    }
    for name, fn in rows.items():
        print("%-24s %8.2f us" % (name, _best(fn, n)))


if __name__ == "__main__":
    main()
