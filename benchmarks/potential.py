"""Benchmark of `mbgpu potential`: atom-point evaluations per second on the GPU and in numpy.

A generated receptor (100,000 atoms, seeded) on a 257^3 grid (AutoGrid's npts 256: 16.98 M points),
constant and distance-dependent dielectric; the numpy reference on a small sub-grid in the same run;
the GPU checked against the numpy values at those points. Prints a small table.

    python3 benchmarks/potential.py [--atoms 100000] [--npts 256] [--sweep]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from mbgpu.grid.dielectric import ElectrostaticModel
from mbgpu.grid.gpf import GridSpec
from mbgpu.grid.reference import grid_points, potential_at, relative_coords

MODELS = {"constant": ElectrostaticModel(False, 4.0, 0.1406),
          "ddd": ElectrostaticModel(True, 40.0, 0.1406)}


def generated_receptor(n_atoms: int, spec: GridSpec, seed: int = 2024):
    """Atoms uniform in the grid box plus 8 A, charges N(0, 0.3): a stand-in for a large receptor."""
    rng = np.random.default_rng(seed)
    half = np.asarray(spec.half) * spec.spacing + 8.0
    coords = np.asarray(spec.center) + rng.uniform(-half, half, (n_atoms, 3))
    return coords, rng.normal(0.0, 0.3, n_atoms)


def time_gpu(grid, coords, charges, spec, model, repeats: int = 2) -> tuple[float, np.ndarray]:
    """Best wall time of compute() (kernels + constant uploads + the slab copy back)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = grid.compute(coords, charges, spec, model)
        best = min(best, time.perf_counter() - t0)
    return best, out


def cpu_rate(coords, charges, spec, model, idx) -> tuple[float, np.ndarray]:
    """numpy reference evaluations per second on the points `idx` (one thread of numpy)."""
    rel = relative_coords(coords, spec)
    pts = grid_points(spec, idx)
    t0 = time.perf_counter()
    vals = potential_at(pts, rel, charges, model)
    return len(idx) * len(charges) / (time.perf_counter() - t0), vals


def device_peaks(dev) -> tuple[str, float]:
    """Name and the SFU (rsqrt) peak per second: SMs * 16 per clock * clock."""
    import pycuda.driver as drv

    d = dev.device
    sms = d.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    clock = d.get_attribute(drv.device_attribute.CLOCK_RATE) * 1e3
    return "%s (%d SMs, %.2f GHz)" % (d.name(), sms, clock / 1e9), sms * 16 * clock


def sweep(dev, coords, charges, spec) -> None:
    """Kernel shapes on a smaller receptor: G evals/s per (shape, model, ddd mode)."""
    from mbgpu.cuda.coulomb import CoulombGrid, KernelShape

    shapes = [KernelShape(), KernelShape(nx=16, block_x=8), KernelShape(nx=16, block_x=16),
              KernelShape(nx=4, block_x=32, block_y=4), KernelShape(nx=16, block_x=8, atom_src="constant")]
    print("\nshape sweep (%d atoms):" % len(charges))
    for shape in shapes:
        for mode in ("table", "closed"):
            grid = CoulombGrid(dev, shape=shape, ddd_mode=mode)
            for name, model in MODELS.items():
                if name == "constant" and mode == "closed":
                    continue
                sec, _ = time_gpu(grid, coords, charges, spec, model, repeats=1)
                print("  nx=%2d bx=%2d by=%d %-8s %-8s %-6s %8.1f G evals/s" % (
                    shape.nx, shape.block_x, shape.block_y, shape.atom_src, name, mode,
                    len(charges) * spec.n_points / sec / 1e9))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--atoms", type=int, default=100_000)
    ap.add_argument("--npts", type=int, default=256)
    ap.add_argument("--cpu-points", type=int, default=512)
    ap.add_argument("--sweep", action="store_true", help="also try kernel shapes (20k atoms)")
    args = ap.parse_args()
    from mbgpu.cuda.context import open_device
    from mbgpu.cuda.coulomb import CoulombGrid, KernelShape

    spec = GridSpec((args.npts,) * 3, 0.375, (10.0, -5.0, 2.5))
    coords, charges = generated_receptor(args.atoms, spec)
    evals = args.atoms * spec.n_points
    idx = np.linspace(0, spec.n_points - 1, args.cpu_points).astype(np.int64)
    dev = open_device()
    with dev:
        name, sfu_peak = device_peaks(dev)
        print("device: %s; rsqrt (SFU) peak %.0f G/s" % (name, sfu_peak / 1e9))
        print("receptor %d atoms, grid %d^3 = %d points, %.3g evaluations per map"
              % (args.atoms, args.npts + 1, spec.n_points, evals))
        print("%-10s %-7s %-9s %9s %12s %8s %12s" % ("model", "ddd", "atoms in", "GPU s",
                                                     "G evals/s", "%SFU", "max|gpu-np|"))
        results = {}
        for mname, model in MODELS.items():
            rate_cpu, ref = cpu_rate(coords, charges, spec, model, idx)
            for mode in (("table", "closed") if model.distance_dependent else ("table",)):
                for src in ("shared", "constant"):
                    grid = CoulombGrid(dev, KernelShape(atom_src=src), ddd_mode=mode)
                    grid.compute(coords[:100], charges[:100], GridSpec((8, 8, 8), 0.375, spec.center), model)
                    sec, out = time_gpu(grid, coords, charges, spec, model)
                    err = float(np.max(np.abs(out.ravel()[idx] - ref)))
                    rate = evals / sec
                    results[(mname, mode, src)] = rate
                    print("%-10s %-7s %-9s %9.3f %12.1f %7.1f%% %12.2e" % (
                        mname, mode if model.distance_dependent else "-", src, sec, rate / 1e9,
                        100 * rate / sfu_peak, err))
            print("%-10s %-7s %-9s %9s %12.4f %8s   (numpy, %d points, 1 process)" % (
                mname, "cpu", "-", "", rate_cpu / 1e9, "", len(idx)))
        if args.sweep:
            sweep(dev, coords[:20_000], charges[:20_000], spec)
    print("\ntargets: constant >= 2000 G evals/s: %s; distance-dependent >= 800 G evals/s: %s" % (
        "met" if results[("constant", "table", "shared")] >= 2e12 else "NOT met",
        "met" if results[("ddd", "table", "shared")] >= 8e11 else "NOT met"))


if __name__ == "__main__":
    main()
