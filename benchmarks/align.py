"""Benchmark of `mbgpu align` (issue 8): GCUPS of the CUDA Needleman-Wunsch kernels on one GPU.

    python benchmarks/align.py            # GPU: 10k, 100k, 1M single pairs (score-only, traceback), batch
    python benchmarks/align.py --parasail # CPU only: parasail nw_scan_32 / nw_trace_scan_32, one core

Pairs are seeded random proteins where B is a mutated copy of A with indels (a homolog-like pair), so the
traceback path is long and realistic. Every traceback is re-scored and must equal the kernel's score.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

INT_PEAK_GCUPS = 4000.0  # rough bound: 132 SMs * 64 int32/clk * 1.98 GHz / ~4 int ops per cell


def homolog(rng, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A (m) and B (n): A with ~2% deletions, random insertions up to n residues, 10% substitutions."""
    a = rng.integers(0, 20, m).astype(np.uint8)
    b = a[rng.random(m) > 0.02]
    if len(b) > n:
        b = b[np.sort(rng.choice(len(b), n, replace=False))]
    extra = n - len(b)
    b = np.insert(b, rng.integers(0, len(b) + 1, extra), rng.integers(0, 20, extra).astype(np.uint8))
    flip = rng.random(n) < 0.1
    b[flip] = rng.integers(0, 20, int(flip.sum()))
    return a, b.astype(np.uint8)


def row(label, cells, seconds, check):
    g = cells / seconds / 1e9
    print("%-34s %14.3e %10.4f %10.1f %6.1f%%  %s" % (label, cells, seconds, g, 100 * g / INT_PEAK_GCUPS, check),
          flush=True)


def single(dev, size: int, seed: int, mat, gap: int, verify_cpu: bool, tw: int | None = None,
           rows: int = 8) -> None:
    """Score-only, then both tracebacks (kept directions where they fit, tile recomputation); the two
    tracebacks must give the same ops and re-score to the kernel's score."""
    from mbgpu.align import reference
    from mbgpu.align.alignment import rescore
    from mbgpu.cuda import nw

    a, b = homolog(np.random.default_rng(seed), size, size)
    cells = float(len(a)) * len(b)
    default = nw.default_tile_width(len(a), len(b))
    tw = default if tw is None else tw
    only = nw.align_pair(dev, a, b, mat.scores, gap, traceback=False, tw=tw, rows=rows)
    check = "score %d" % only.score
    if verify_cpu:
        check += " cpu_ref==:%s" % (reference.score(a, b, mat.scores, gap) == only.score)
    tag = " %dx%d%s" % (32 * rows, tw, "" if tw == default and rows == 8 else " (not default)")
    row("%dx%d score-only%s" % (len(a), len(b), tag), cells, only.timings["forward_s"], check)
    with dev:
        fits = nw._keep_directions(nw.PairPlan(len(a), len(b), tw, rows), "auto")
    ops = {}
    for mode in (("dirs", "borders") if fits else ("borders",)):
        full = nw.align_pair(dev, a, b, mat.scores, gap, traceback=True, tw=tw, trace=mode, rows=rows)
        ok = rescore(full.ops, a, b, mat.scores, gap) == full.score == only.score
        ops[mode] = full.ops
        row("%dx%d traceback (%s)%s" % (len(a), len(b), mode, tag), cells, full.timings["total_s"],
            "rescore==score:%s, traceback part %.4f s" % (ok, full.timings["total_s"] - full.timings["forward_s"]))
    if len(ops) == 2:
        print("   dirs and borders tracebacks identical:", bool(np.array_equal(ops["dirs"], ops["borders"])),
              flush=True)


def batch(dev, npairs: int, seed: int, mat, gap: int) -> None:
    from mbgpu.cuda import nw

    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(npairs):
        m, n = (int(x) for x in rng.integers(1000, 5001, 2))
        pairs.append(homolog(rng, m, n))
    cells = float(sum(len(a) * len(b) for a, b in pairs))
    nw.batch_scores(dev, pairs[:64], mat.scores, gap)  # warm-up
    t = {}
    w0 = time.perf_counter()
    got = nw.batch_scores(dev, pairs, mat.scores, gap, timings=t)
    wall = time.perf_counter() - w0
    picks = np.random.default_rng(1).choice(npairs, 16, replace=False)
    ok = all(nw.align_pair(dev, *pairs[k], mat.scores, gap, traceback=False).score == got[k] for k in picks)
    row("batch %d pairs 1-5k (kernel)" % npairs, cells, t["kernel_s"], "16 pairs == pair kernel:%s" % ok)
    row("batch %d pairs 1-5k (with host)" % npairs, cells, wall, "incl. packing + copies")


def parasail_cpu(size: int, seed: int, gap: int) -> None:
    import parasail

    letters = np.frombuffer(b"ARNDCQEGHILKMFPSTWYV", np.uint8)
    a, b = homolog(np.random.default_rng(seed), size, size)
    sa, sb = letters[a].tobytes().decode(), letters[b].tobytes().decode()
    for name in ("nw_scan_32", "nw_trace_scan_32"):
        fn = getattr(parasail, name)
        t0 = time.perf_counter()
        r = fn(sa, sb, gap, gap, parasail.blosum62)
        dt = time.perf_counter() - t0
        row("parasail %s %dx%d (CPU, 1 core)" % (name, len(sa), len(sb)), float(len(sa)) * len(sb), dt,
            "score %d" % r.score)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--parasail", action="store_true", help="CPU parasail figures instead of the GPU")
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--batch", type=int, default=10000)
    p.add_argument("--gap", type=int, default=11)
    p.add_argument("--other-widths", action="store_true", help="also time 100k and 1M with the other tile width")
    p.add_argument("--variants", default="", help="also time every size with these ROWSxCOLS tiles (128x64,...)")
    args = p.parse_args()
    print("%-34s %14s %10s %10s %7s  %s" % ("case", "cells", "seconds", "GCUPS", "%peak", "check"))
    if args.parasail:
        parasail_cpu(10000, 1, args.gap)
        return
    from mbgpu.align.matrices import blosum62
    from mbgpu.cuda import nw
    from mbgpu.cuda.context import open_device

    dev = open_device()
    mat = blosum62()
    with dev:
        print("device:", dev.device.name(), dev.arch, flush=True)
    single(dev, 2000, 0, mat, args.gap, verify_cpu=True)  # warm-up (compile) and a CPU cross-check
    for k, size in enumerate(int(s) for s in args.sizes.split(",")):
        single(dev, size, 10 + k, mat, args.gap, verify_cpu=size <= 10000)
        if size in (100000, 1000000) and args.other_widths:   # the other tile width, for comparison
            other = 256 if nw.default_tile_width(size, size) == 128 else 128
            single(dev, size, 10 + k, mat, args.gap, verify_cpu=False, tw=other)
        for variant in filter(None, args.variants.split(",")):   # ROWSxCOLS tiles, e.g. 128x64
            th, tw = (int(x) for x in variant.split("x"))
            single(dev, size, 10 + k, mat, args.gap, verify_cpu=size <= 10000, tw=tw, rows=th // 32)
    if args.batch:
        batch(dev, args.batch, 99, mat, args.gap)


if __name__ == "__main__":
    main()
