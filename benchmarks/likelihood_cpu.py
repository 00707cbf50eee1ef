"""CPU benchmark of the likelihood backends: numpy (the float64 reference) vs compiled (numba), one thread.

Cases (data simulated on a random tree with fixed seeds): primates-sized DNA (12 taxa, 413 patterns,
GTR+G4), DNA 50 taxa x 2k sites, DNA 64 x 50k, protein 40 x 20k (WAG+G4). For each backend it times

* `full`: one complete evaluation (matrices for every branch, every internal node's partials with the
  sampler's default scaling (every 4th node and the root), scale sum, root lnL);
* `path`: a typical MCMC step's partial update: one branch's matrix, the ~log2(n) nodes from a node at
  depth ~log2(n) up to the root into their other slot (rescaled), the scale sum and the root lnL.

Times are medians of repeated calls within a budget; numpy's BLAS is held to one thread
(OPENBLAS/OMP/MKL_NUM_THREADS default to 1 here) and the compiled backend is built with threads=1. Compile time (first call, empty numba cache, in a
fresh process) and the cache-load time (first call, warm cache, fresh process) are reported separately.

    python benchmarks/likelihood_cpu.py [--budget 3] [--cases primates dna50 dna64 prot40] [--no-compile]
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):   # one thread for numpy's BLAS
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from mbgpu.likelihood import NumpyBackend, PartitionLikelihood  # noqa: E402
from mbgpu.likelihood.evaluate import _compact_states, tree_operations  # noqa: E402
from mbgpu.likelihood.protocol import NONE  # noqa: E402
from mbgpu.models import ModelSpec, build_model  # noqa: E402
from mbgpu.tree import random_tree  # noqa: E402

GTR_G4 = ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0),
                   statefreqs=(0.3, 0.2, 0.22, 0.28), rates="gamma", alpha=0.5)
WAG_G4 = ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.5)
CASES = {   # name -> (label, model, taxa, sites)
    "primates": ("DNA GTR+G4", GTR_G4, 12, 413),
    "dna50": ("DNA GTR+G4", GTR_G4, 50, 2_000),
    "dna64": ("DNA GTR+G4", GTR_G4, 64, 50_000),
    "prot40": ("protein WAG+G4", WAG_G4, 40, 20_000),
}
SCALING = 4          # the sampler's default (beaglescaling=dynamic)


def simulate(model, tree, n_sites: int, rng: np.random.Generator) -> np.ndarray:
    """One-hot tip partials (n_tips, n_sites, S) simulated down `tree` (a gamma category per site)."""
    s = model.n_states
    cat = rng.choice(model.n_categories, size=n_sites, p=model.category_weights)
    states = np.empty((tree.n_nodes, n_sites), dtype=np.int64)
    states[tree.root] = rng.choice(s, size=n_sites, p=model.frequencies)
    for v in tree.postorder()[::-1].tolist():
        if v == tree.root:
            continue
        p = model.eigen.transition_matrices(tree.brlen[v] * model.category_rates)        # (C, S, S)
        cdf = np.cumsum(p[cat, states[tree.parent[v]]], axis=1)
        states[v] = np.minimum((cdf < rng.random(n_sites)[:, None]).sum(axis=1), s - 1)
    return np.eye(s)[states[:tree.n_tips]]


def compiled_factory():
    from mbgpu.likelihood.compiled_backend import CompiledBackend

    return lambda spec: CompiledBackend(spec, threads=1)


def median_time(fn, budget_s: float) -> tuple[float, int]:
    fn()                                            # warm-up
    times, start = [], time.perf_counter()
    while not times or (time.perf_counter() - start < budget_s and len(times) < 500):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), len(times)


def path_step(part: PartitionLikelihood, tree):
    """A closure doing one MCMC-like partial update (see the module docstring) on `part`'s backend."""
    slots, b, model = part.slots, part.backend, part.model
    part.log_likelihood(tree)                       # slot 0 holds the whole tree
    kids = tree.children()
    depth = np.zeros(tree.n_nodes, dtype=np.int64)
    for v in tree.postorder()[::-1].tolist():
        if v != tree.root:
            depth[v] = depth[tree.parent[v]] + 1
    inner = np.arange(tree.n_tips, tree.n_nodes)
    target = int(round(np.log2(tree.n_tips)))
    start = int(inner[np.argmin(np.abs(depth[inner] - (target - 1)))])
    path = [start]
    while path[-1] != tree.root:
        path.append(int(tree.parent[path[-1]]))
    on_path = set(path)
    active = {v: (1 if v in on_path else 0) for v in range(tree.n_nodes)}
    rows = []
    for v in path:
        ch = kids[v][:2]
        rows.append((slots.buffer(v, 1), slots.scale(v, 1), NONE,
                     slots.buffer(ch[0], active[ch[0]]), slots.matrix(ch[0]), slots.buffer(ch[1], active[ch[1]]),
                     slots.matrix(ch[1])))
    ops = np.array(rows, dtype=np.int64)
    scales = np.array([slots.scale(v, active[v]) for v in inner.tolist()], dtype=np.int64)
    third = kids[tree.root][2]
    edge = kids[start][0]
    cum = slots.cumulative_scale(1)
    mat_idx, length = np.array([slots.matrix(edge)]), np.array([tree.brlen[edge] * 1.1])

    def step():
        b.update_transition_matrices(model.eigen, mat_idx, length)
        b.update_partials(ops)
        b.reset_scale(cum)
        b.accumulate_scale(cum, scales)
        return b.root_log_likelihood(slots.buffer(tree.root, 1), model.frequencies, model.category_weights,
                                     model.pinvar, cum, slots.buffer(third, active[third]), slots.matrix(third))

    # every other internal node is scaled in slot 0 by tree_operations only every 4th: write all once
    ops0, _, _, _, _ = tree_operations(tree, slots, True, 0)
    b.update_partials(ops0)
    return step, len(path)


def compile_times() -> tuple[float, float]:
    """(first call with an empty numba cache, first call with that cache warm), each in a fresh process."""
    code = ("import time; t=time.perf_counter(); import numpy as np; "
            "from mbgpu.likelihood import PartitionLikelihood; "
            "from mbgpu.likelihood.compiled_backend import CompiledBackend; "
            "from mbgpu.models import ModelSpec, build_model; from mbgpu.tree import random_tree; "
            "r=np.random.default_rng(1); "
            "m=[build_model(ModelSpec(datatype=d, rates='propinv', pinvar=0.1)) for d in ('dna', 'protein')]; "
            "[PartitionLikelihood(np.eye(x.n_states)[r.integers(x.n_states, size=(6, 9))], np.ones(9), x, "
            "backend=CompiledBackend).log_likelihood(random_tree(6, r)) for x in m]; "
            "print(time.perf_counter()-t)")
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        run = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                    text=True).stdout) for _ in range(2)]
    return run[0], run[1]


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=3.0, help="seconds of timing per case, backend and kind")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-time measurement")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    import numba

    print("machine: %s, nproc %d, numpy %s, numba %s, python %s" % (cpu_model(), os.cpu_count(), np.__version__,
          numba.__version__, platform.python_version()))
    if not args.no_compile:
        cold, warm = compile_times()
        print("compiled backend, first call in a fresh process: %.2f s with an empty numba cache, "
              "%.2f s with the cache warm (both include imports)" % (cold, warm))
    print("%-8s %-15s %5s %7s %5s | %11s %11s %7s | %11s %11s %7s" % (
        "case", "model", "taxa", "pats", "path", "numpy full", "compiled", "x", "numpy path", "compiled", "x"))
    for name in args.cases:
        label, spec, n_taxa, n_sites = CASES[name]
        rng = np.random.default_rng([args.seed, n_taxa, n_sites])
        model = build_model(spec)
        tree = random_tree(n_taxa, rng, brlen=lambda g, n: g.exponential(0.08, n))
        tips = simulate(model, tree, n_sites, rng)
        assert all(_compact_states(t) is not None for t in tips)
        row, values = [], []
        for kind in ("full", "path"):
            for factory in (NumpyBackend, compiled_factory()):
                part = PartitionLikelihood(tips, np.ones(n_sites), model, backend=factory, scaling=SCALING)
                if kind == "full":
                    fn, n_path = (lambda p=part: p.log_likelihood(tree)), None
                else:
                    fn, n_path = path_step(part, tree)
                values.append(fn())
                row.append(median_time(fn, args.budget)[0])
        assert np.allclose(values[0::2], values[1::2], rtol=1e-12, atol=0), values
        print("%-8s %-15s %5d %7d %5d | %9.3fms %9.3fms %6.1fx | %9.3fms %9.3fms %6.1fx" % (
            name, label, n_taxa, n_sites, n_path, 1e3 * row[0], 1e3 * row[1], row[0] / row[1],
            1e3 * row[2], 1e3 * row[3], row[2] / row[3]), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
