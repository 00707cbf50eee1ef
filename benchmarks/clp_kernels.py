"""Kernel benchmark of the CUDA partials update (cuda/likelihood_partials.cu) on one GPU.

For each node class (tip-tip, tip-internal, internal-internal), DNA (4 states x 4 categories) and
protein (20 x 4), fp32 and fp64, at 10k, 100k and 1M patterns: time one launch of K independent
operations (K = 1M / patterns, distinct children and parents, so small sizes are not L2 hits or
launch-bound) with CUDA events, and report GB/s (bytes = children read + parent written + matrices;
a compact tip child is 1 byte per pattern), the fraction of the device-to-device copy bandwidth
measured in the same run (read + write), and G partials/s (patterns x states x categories / s).

    python3 benchmarks/clp_kernels.py [--patterns 10000 100000 1000000] [--variants] [--device 0]
"""
from __future__ import annotations

import argparse

import numpy as np

from mbgpu.likelihood import InstanceSpec
from mbgpu.models import ModelSpec, build_model

CLASSES = ("tip-tip", "tip-internal", "internal-internal")
DATA = {"DNA": ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0), rates="gamma", alpha=0.5),
        "protein": ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.5)}


def copy_bandwidth(dev, nbytes: int = 2 << 30, reps: int = 20) -> float:
    """Device-to-device memcpy bandwidth in bytes/s, counting read + write."""
    import pycuda.driver as drv

    with dev:
        a, b = drv.mem_alloc(nbytes), drv.mem_alloc(nbytes)
        drv.memcpy_dtod(b, a, nbytes)
        start, end = drv.Event(), drv.Event()
        start.record()
        for _ in range(reps):
            drv.memcpy_dtod(b, a, nbytes)
        end.record()
        end.synchronize()
        seconds = start.time_till(end) / 1e3 / reps
        a.free()
        b.free()
    return 2.0 * nbytes / seconds


def make_ops(node_class: str, k: int, n_tips: int, rescale: bool = False) -> np.ndarray:
    """K independent operations of one class: op i writes partial 2K+i from tips/partials 2i, 2i+1
    (with `rescale`, each also writes scale buffer i)."""
    rows = []
    for i in range(k):
        a = 2 * i if node_class != "internal-internal" else n_tips + 2 * i
        b = 2 * i + 1 if node_class == "tip-tip" else n_tips + 2 * i + 1
        rows.append((n_tips + 2 * k + i, i if rescale else -1, -1, a, 0, b, 1))
    return np.array(rows, dtype=np.int64)


def bytes_moved(node_class: str, p: int, s: int, c: int, real: int, rescale: bool = False) -> int:
    vec = c * p * s * real
    child = {"tip-tip": 2 * p, "tip-internal": p + vec, "internal-internal": 2 * vec}[node_class]
    return child + vec + 2 * c * s * s * real + (8 * p if rescale else 0)


class Codon61:
    """A codon-sized state space (61 states, 1 category) with random row-stochastic matrices."""
    n_states, n_categories = 61, 1


def set_matrices(b, model) -> None:
    if isinstance(model, Codon61):
        rng = np.random.default_rng(5)
        m = rng.random((2, 1, 61, 61))
        b.set_transition_matrices(np.arange(2), m / m.sum(axis=-1, keepdims=True))
    else:
        b.set_category_rates(model.category_rates)
        b.update_transition_matrices(model.eigen, np.arange(2), np.array([0.1, 0.3]))


def time_case(dev, model, node_class, p, precision, reps=None, rescale=False, **variant) -> tuple[float, int]:
    """Seconds per operation of one launch of K ops; and K."""
    import pycuda.driver as drv

    from mbgpu.cuda.backend import CudaBackend

    s, c = model.n_states, model.n_categories
    k = max(1, 1_000_000 // p)
    spec = InstanceSpec(n_tips=2 * k, n_partials=3 * k, n_patterns=p, n_states=s, n_categories=c,
                        n_matrices=2, n_scale_buffers=k if rescale else 1)
    b = CudaBackend(spec, device=dev, precision=precision, **variant)
    rng = np.random.default_rng(1)
    for t in range(2 * k):
        b.set_tip_states(t, rng.integers(0, s + 1, p))
    set_matrices(b, model)
    ops = make_ops(node_class, k, 2 * k, rescale)
    with dev:
        chunk = rng.random(c * p * s).astype(b.dtype)
        for i in range(2 * k):
            drv.memcpy_htod(int(b.d_partials) + i * chunk.nbytes, chunk)
    b.update_partials(ops)                                   # compiles, uploads tips, checks the path
    with dev:
        d_ops = b._upload("bench_ops", ops)
        start, end = drv.Event(), drv.Event()
        reps = reps or 20
        b.launch_level(d_ops, 0, k)
        start.record()
        for _ in range(reps):
            b.launch_level(d_ops, 0, k)
        end.record()
        end.synchronize()
        seconds = start.time_till(end) / 1e3 / reps / k
    del b
    return seconds, k


def main(argv=None) -> int:
    from mbgpu.cuda.context import open_device

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patterns", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--device", type=int, default=None)
    ap.add_argument("--variants", action="store_true", help="also sweep block shapes at 1M internal-internal")
    ap.add_argument("--paths", action="store_true",
                    help="wide state spaces at 1M internal-internal: tensor cores against SIMT, with and without "
                         "rescaling, and a 61-state (codon-sized) case")
    ap.add_argument("--only-paths", action="store_true", help="--paths without the main table")
    ap.add_argument("--mma-sweep", action="store_true",
                    help="protein at 1M internal-internal with rescaling: tensor-core variants (prefetch, blocks/SM)")
    args = ap.parse_args(argv)
    dev = open_device(args.device)
    copy = copy_bandwidth(dev)
    print("device: %s (%s); measured copy bandwidth %.0f GB/s (read+write)" % (dev.device.name(), dev.arch, copy / 1e9))
    if args.mma_sweep:
        mma_sweep(dev, copy)
    if args.paths or args.only_paths:
        compare_paths(dev, copy, max(args.patterns))
    if args.only_paths:
        return 0
    print("%-8s %-18s %-6s %9s %5s %10s %9s %7s %12s" % ("data", "class", "prec", "patterns", "K", "us/op",
                                                      "GB/s", "%copy", "Gpartials/s"))
    for label, spec in DATA.items():
        model = build_model(spec)
        s, c = model.n_states, model.n_categories
        for precision in ("single", "double"):
            real = 4 if precision == "single" else 8
            for node_class in CLASSES:
                for p in args.patterns:
                    sec, k = time_case(dev, model, node_class, p, precision)
                    gbs = bytes_moved(node_class, p, s, c, real) / sec
                    print("%-8s %-18s %-6s %9d %5d %10.2f %9.0f %6.1f%% %12.1f" % (
                        label, node_class, precision, p, k, sec * 1e6, gbs / 1e9, 100 * gbs / copy,
                        p * s * c / sec / 1e9), flush=True)
    if args.variants:
        sweep(dev, copy)
    return 0


def mma_sweep(dev, copy: float) -> None:
    """Tensor-core variants for protein, 1M patterns, internal-internal with rescaling."""
    model = build_model(DATA["protein"])
    for precision in ("single", "double"):
        real = 4 if precision == "single" else 8
        for prefetch in (0, 1):
            for mb in (1, 2, 3):
                try:
                    sec, _ = time_case(dev, model, "internal-internal", 1_000_000, precision, rescale=True, mma=True,
                                       min_blocks=mb, tuning={"MMA_PREFETCH": prefetch})
                except Exception as exc:
                    print("protein %-6s prefetch=%d mb=%d failed: %s" % (precision, prefetch, mb, str(exc)[:100]))
                    continue
                gbs = bytes_moved("internal-internal", 1_000_000, 20, 4, real, True) / sec
                print("protein %-6s prefetch=%d mb=%d %8.1f us %5.1f%%" % (precision, prefetch, mb, sec * 1e6,
                                                                         100 * gbs / copy), flush=True)


def compare_paths(dev, copy: float, p: int) -> None:
    """Internal-internal updates of wide state spaces: tensor-core (mma) against SIMT kernels."""
    print("wide state spaces, internal-internal, %d patterns: %% of copy bandwidth" % p)
    cases = [("protein", build_model(DATA["protein"])), ("codon61", Codon61())]
    for label, model in cases:
        s, c = model.n_states, model.n_categories
        for precision in ("single", "double"):
            real = 4 if precision == "single" else 8
            for rescale in (False, True):
                for mma in (True, False):
                    try:
                        sec, _ = time_case(dev, model, "internal-internal", p, precision, rescale=rescale, mma=mma)
                    except Exception as exc:                      # the SIMT path may not fit 61 states
                        print("%-8s %-6s rescale=%d mma=%d failed: %s" % (label, precision, rescale, mma,
                                                                         str(exc)[:100]), flush=True)
                        continue
                    gbs = bytes_moved("internal-internal", p, s, c, real, rescale) / sec
                    print("%-8s %-6s rescale=%d mma=%d %8.1f us %8.0f GB/s %5.1f%%" % (
                        label, precision, rescale, mma, sec * 1e6, gbs / 1e9, 100 * gbs / copy), flush=True)


def sweep(dev, copy: float) -> None:
    """Block shapes for internal-internal at 1M patterns (to choose the defaults)."""
    print("variants (internal-internal, 1M patterns): pattern_block, min_blocks")
    for label, spec in DATA.items():
        model = build_model(spec)
        s, c = model.n_states, model.n_categories
        for precision in ("single", "double"):
            real = 4 if precision == "single" else 8
            for pb in (32, 64, 128):
                for mb in (1, 2, 3):
                    try:
                        sec, _ = time_case(dev, model, "internal-internal", 1_000_000, precision,
                                           pattern_block=pb, min_blocks=mb)
                    except Exception as exc:                      # a variant may not compile or fit
                        print("%-8s %-6s pb=%d mb=%d failed: %s" % (label, precision, pb, mb, str(exc)[:80]))
                        continue
                    gbs = bytes_moved("internal-internal", 1_000_000, s, c, real) / sec
                    print("%-8s %-6s pb=%3d mb=%d %8.0f GB/s %5.1f%%" % (label, precision, pb, mb, gbs / 1e9,
                                                                      100 * gbs / copy), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
