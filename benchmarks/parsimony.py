"""ParsSPR proposal time: bit-plane parsimony vs the per-pattern path, on the simulated sets of
benchmarks/mcmc_gpu.py (DNA 64 x 50k sites, protein 40 x 20k), with a check that both paths propose the same.

    python benchmarks/parsimony.py [--calls 10] [--gpu]

--gpu also times ParsSPR with its costs on the GPU (cuda/parsimony.cu): the whole proposal and the
kernel alone (CUDA events around the launch), with the check that it proposes what numpy proposes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcmc_gpu import CASES, simulate  # noqa: E402

from mbgpu.moves import bitplanes  # noqa: E402
from mbgpu.moves.base import MoveContext  # noqa: E402
from mbgpu.moves.pars_spr import ParsSPR  # noqa: E402
from mbgpu.tree import random_tree  # noqa: E402


def time_path(planes: bool, tree, ctx, calls: int) -> tuple[float, list[float]]:
    """Seconds per ParsSPR proposal and the proposals' log Hastings ratios, with or without bit planes."""
    saved, bitplanes.AVAILABLE = bitplanes.AVAILABLE, planes and bitplanes.AVAILABLE
    ctx = replace(ctx, prepared={})                                 # planes are packed for this path
    try:
        move = ParsSPR()
        move.propose(tree, np.random.default_rng(3), ctx)          # packs the planes once
        rng = np.random.default_rng(3)
        t = time.perf_counter()
        props = [move.propose(tree, rng, ctx) for _ in range(calls)]
        return (time.perf_counter() - t) / calls, [float(p.log_hastings) for p in props]
    finally:
        bitplanes.AVAILABLE = saved


def time_gpu(tree, ctx, calls: int) -> tuple[float, float, float, list[float]]:
    """(s per proposal, s in missed_weights, s in the kernel, log Hastings ratios) with ParsSPR's costs
    on the GPU."""
    import pycuda.driver as drv

    from mbgpu.cuda.context import open_device
    from mbgpu.cuda.parsimony import GpuParsimony, segment

    gpu = GpuParsimony(open_device(None))
    kernel_s = []
    inner = gpu.missed_weights

    def timed(*args):
        with gpu.device:
            start, end = drv.Event(), drv.Event()
            start.record()
            out = inner(*args)
            end.record()
            end.synchronize()
            kernel_s.append(start.time_till(end) * 1e-3)
        return out

    gpu.missed_weights = timed
    seg = segment(ctx.n_states[0])
    with gpu.device:
        fn = gpu._kernel(seg)
    launch_s = []

    class Timed:            # the kernel alone: events around its launch
        def prepared_call(self, *args, **kw):
            start, end = drv.Event(), drv.Event()
            start.record()
            fn.prepared_call(*args, **kw)
            end.record()
            end.synchronize()
            launch_s.append(start.time_till(end) * 1e-3)

    gpu._fns[seg] = Timed()
    gctx = replace(ctx, parsimony=gpu, prepared={})
    move = ParsSPR()
    move.propose(tree, np.random.default_rng(3), gctx)
    rng = np.random.default_rng(3)
    kernel_s.clear()
    launch_s.clear()
    t = time.perf_counter()
    props = [move.propose(tree, rng, gctx) for _ in range(calls)]
    return ((time.perf_counter() - t) / calls, float(np.median(kernel_s)), float(np.median(launch_s)),
            [float(p.log_hastings) for p in props])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--gpu", action="store_true", help="also time the GPU costs (needs CUDA)")
    a = ap.parse_args(argv)
    for name, case in CASES.items():
        states = simulate(case["n_taxa"], case["n_sites"], case["spec"], seed=5)
        cols, counts = np.unique(states, axis=1, return_counts=True)
        ctx = MoveContext(n_tips=case["n_taxa"], pattern_masks=[(np.uint32(1) << cols.astype(np.uint32),
                                                                  counts.astype(float))],
                          n_states=[len(case["alphabet"])])       # as the sampler's context has them
        tree = random_tree(case["n_taxa"], np.random.default_rng(1))
        slow, a_props = time_path(False, tree, ctx, a.calls)
        fast, b_props = time_path(True, tree, ctx, a.calls)
        print("%-8s %d taxa x %d patterns: per-pattern %.1f ms, bit planes %.1f ms (%.1fx), same proposals: %s"
              % (name, cols.shape[0], cols.shape[1], slow * 1e3, fast * 1e3, slow / fast, a_props == b_props))
        if a.gpu:
            whole, costs, kernel, g_props = time_gpu(tree, ctx, a.calls)
            print("%-8s GPU costs: %.3f ms per proposal, of which %.3f ms in missed_weights (tree program, "
                  "copies, kernel: median) and %.3f ms in the kernel; same proposals as numpy: %s"
                  % (name, whole * 1e3, costs * 1e3, kernel * 1e3, g_props == b_props))
    return 0


if __name__ == "__main__":
    sys.exit(main())
