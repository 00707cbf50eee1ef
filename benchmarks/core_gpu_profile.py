"""Where a GPU generation of the compiled core goes: host planning, queueing the launches, waiting for
the device (per generation, summed over its flushes); launches, operations and bytes moved per
generation; the share of the device's measured copy bandwidth that the whole run's generation rate
(start-up included: use a long --ngen) reaches.

    python3 benchmarks/core_gpu_profile.py --data dna64x50k prot40x20k --ngen 600 [--precision single]

Runs mbgpu in this process on benchmarks/peers.py's data sets (4 chains x 2 runs, MrBayes' default moves)
with the CUDA backend, times DeviceDivision's plan/launch/collect and the generations (CoreStepper.step,
from the first to the last: start-up left out), and counts what each flush holds.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import peers  # noqa: E402
from clp_kernels import copy_bandwidth  # noqa: E402  (the kernels' benchmarks' measure)


class Meter:
    """Wraps DeviceDivision and CoreStepper.step: seconds in plan / launch / collect, the steps' span,
    flush contents, bytes moved."""

    def __init__(self):
        self.t = np.zeros(5)          # plan, launch (plan included), collect, the meter's counting, its events
        self.flushes = self.ops = self.levels = self.mats = self.roots = self.steps = self.launches = 0
        self.span = [None, None]
        self.bytes = 0.0
        self.backend = None
        self.events = None            # a list of (start, end) CUDA events per flush when timing the device

    def device_seconds(self) -> float:
        """The device's time over every flush timed (from the stream reaching its upload to its root
        sums' copy): the GPU's share of a generation, whether or not the host kept it busy."""
        return sum(end.time_since(start) for start, end in self.events or ()) / 1e3

    def install(self, cls):
        """Wrap DeviceDivision.plan (host planning), .launch (planning + queueing) and .collect (waiting)."""
        meter, plan, launch, collect = self, cls.plan, cls.launch, cls.collect

        def timed_plan(div, tree, *a):
            t0 = time.perf_counter()
            flush = plan(div, tree, *a)
            t1 = time.perf_counter()
            meter.t[0] += t1 - t0
            meter.count(div, flush)
            spent = time.perf_counter() - t1            # the meter's own time, taken out of 'launch' below
            meter.t[0] += spent
            meter.t[3] += spent
            return flush

        def timed_launch(div, *a, **k):
            start = meter.event(div)
            t0 = time.perf_counter()
            try:
                return launch(div, *a, **k)
            finally:
                t1 = time.perf_counter()
                meter.t[1] += t1 - t0
                if start is not None:
                    meter.events.append((start, meter.event(div)))

        def timed_collect(div, ticket):
            t0 = time.perf_counter()
            collect(div, ticket)
            meter.t[2] += time.perf_counter() - t0

        from mbgpu.core.stepper import CoreStepper

        step = CoreStepper.step
        self.saved = [(cls, "plan", plan), (cls, "launch", launch), (cls, "collect", collect),
                      (CoreStepper, "step", step)]
        cls.plan, cls.launch, cls.collect = timed_plan, timed_launch, timed_collect

        def timed_step(stepper, *a):
            if meter.span[0] is None:
                meter.span[0] = time.perf_counter()
            step(stepper, *a)
            meter.span[1] = time.perf_counter()
            meter.steps += 1

        CoreStepper.step = timed_step

    def event(self, div):
        """A CUDA event recorded on div's device now (None unless timing the device)."""
        if self.events is None:
            return None
        import pycuda.driver as drv

        t0 = time.perf_counter()
        with getattr(div.backend, "inner", div.backend).dev:
            ev = drv.Event()
            ev.record()
        self.t[4] += time.perf_counter() - t0
        return ev

    def per_generation(self) -> tuple[float, int]:
        """(seconds a generation, generations timed): the steps' span without the meter's own work."""
        g = max(self.steps - 1, 1)
        return (self.span[1] - self.span[0] - self.t[3] - self.t[4]) / g, g

    def uninstall(self) -> None:
        for owner, name, fn in self.saved:
            setattr(owner, name, fn)

    def count(self, div, flush) -> None:
        b = getattr(div.backend, "inner", div.backend)
        self.backend = b
        s, c, p = b.spec.n_states, b.spec.n_categories, b.spec.n_patterns
        real = b.real
        n_ops = flush.sizes[2] // 7
        n_roots = flush.sizes[5] // 4
        part = c * p * s * real
        self.flushes += 1
        fused = getattr(flush, "paired", False) and flush.sizes[3] // 5 == n_roots
        self.launches += (flush.n_mat > 0) + 1 + (flush.sizes[3] > 0 and not fused) + 1
        self.ops += n_ops
        self.levels += len(flush.counts)
        self.mats += flush.n_mat
        self.roots += n_roots
        # an operation reads two children (a compact tip: 1 byte per pattern; tip partials: one category)
        # and writes one partial buffer and, when it rescales, its scale row (a scale read: one row); the
        # scale sums read every node's row; the root reads its partials, the third child and the summed
        # scale row and writes the site log likelihoods
        ops = np.asarray(flush.blob[2 * flush.sizes[0]: 2 * flush.sizes[0] + flush.sizes[2]]).reshape(-1, 7)
        tip_vec = np.array([t is not None for t in b.tip_partials], dtype=bool)
        kids = ops[:, [3, 5]]
        is_tip = kids < b.spec.n_tips
        vec_tip = np.zeros_like(is_tip)
        vec_tip[is_tip] = tip_vec[kids[is_tip]]
        child = np.where(~is_tip, part, np.where(vec_tip, p * s * real, p)).sum()
        self.bytes += child + n_ops * part + 8 * p * ((ops[:, 1] >= 0).sum() + (ops[:, 2] >= 0).sum())
        self.bytes += flush.sizes[4] * 8 * p + n_roots * (2 * part + 16 * p)


class Detail:
    """Seconds spent in CudaBackend's launch helpers (host side), by name."""

    NAMES = ("_upload", "_sync_tips", "_invariant_site_table", "launch_jobs", "_work")

    def __init__(self):
        self.t = {}

    def install(self):
        from mbgpu.cuda.backend import CudaBackend

        for name in self.NAMES:
            setattr(CudaBackend, name, self._timed(name, getattr(CudaBackend, name)))

    def _timed(self, name, fn):
        def wrapped(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[name] = self.t.get(name, 0.0) + time.perf_counter() - t0
        return wrapped


def metered_run(data: dict, ngen: int, set_options: str, samplefreq: int, folder: str,
                device_time: bool = False) -> tuple[Meter, float]:
    """Run 4 chains x 2 runs on `data` with the Meter on DeviceDivision (and CUDA events around each
    flush when `device_time`); (meter, wall seconds), the meter's plan/launch times made exclusive
    (launch without planning, planning without the meter)."""
    from mbgpu.console import Console
    from mbgpu.core.device_division import DeviceDivision
    from mbgpu.interpreter import Interpreter

    meter = Meter()
    meter.events = [] if device_time else None
    meter.install(DeviceDivision)
    nex = os.path.join(folder, "run.nex")
    with open(nex, "w") as f:
        f.write("#NEXUS\nbegin mrbayes; set seed=5 swapseed=5 %s;\nexecute %s;\n%s %s\nmcmc ngen=%d nruns=2 "
                "nchains=4 samplefreq=%d printfreq=%d diagnfreq=%d filename=r; end;\n"
                % (set_options, data["path"], data["lset"], data["prset"], ngen, samplefreq, ngen, ngen))
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        t0 = time.perf_counter()
        Interpreter(Console(io.StringIO())).run_file(nex)
        wall = time.perf_counter() - t0
    finally:
        os.chdir(cwd)
        meter.uninstall()
    meter.t[1] -= meter.t[0]                 # launch's own share: queueing, without the planning
    meter.t[0] -= meter.t[3]                 # ... nor the meter's counting
    return meter, wall


class EqualWeights:
    """Give every job of the core's flushes the same weight (update_partials_jobs then splits the grid
    evenly, as before weights existed): the A/B baseline of the weighted grid on the same machine."""

    def __enter__(self):
        from mbgpu.core.device_division import DeviceDivision

        self.cls, self.plan = DeviceDivision, DeviceDivision.plan
        plan = self.plan

        def equal(div, *a, **k):
            flush = plan(div, *a, **k)
            at = sum(flush.sizes[:6])
            flush.blob[at + 2:at + flush.sizes[6]:3] = 1
            return flush

        DeviceDivision.plan = equal
        return self

    def __exit__(self, *exc):
        self.cls.plan = self.plan


def run(data: dict, ngen: int, precision: str, folder: str, device_time: bool = False) -> dict:
    meter, wall = metered_run(data, ngen, "backend=gpu beagleprecision=%s" % precision, 100, folder, device_time)
    per_gen, g = meter.per_generation()
    bw = copy_bandwidth(meter.backend.dev)
    device = {"device_us": 1e6 * meter.device_seconds() / g} if device_time else {}
    return {**device, "data": data["name"], "precision": precision, "generations": ngen, "flushes": meter.flushes,
            "wall_s": wall, "gen_per_s": 1.0 / per_gen, "plan_us": 1e6 * meter.t[0] / g,
            "launch_us": 1e6 * meter.t[1] / g, "wait_us": 1e6 * meter.t[2] / g,
            "ops": meter.ops / g, "levels": meter.levels / g, "matrices": meter.mats / g,
            "launches": meter.launches / g, "MB_moved": meter.bytes / g / 1e6,
            "copy_GBps": bw / 1e9, "bandwidth_bound_gen_per_s": bw / (meter.bytes / g),
            "fraction_of_bound": (1.0 / per_gen) / (bw / (meter.bytes / g))}


def profile(data: dict, args, work: str, weights: str) -> dict:
    """One timed run of `data` as the arguments say; its figures on one line (and returned)."""
    detail = Detail()
    if args.detail:
        detail.install()
    if args.cprofile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        got = prof.runcall(run, data, args.ngen, args.precision, tempfile.mkdtemp(dir=work), args.device_time)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
    else:
        got = run(data, args.ngen, args.precision, tempfile.mkdtemp(dir=work), args.device_time)
    print("weights=%s " % weights + " ".join("%s=%s" % (k, ("%.4g" % v) if isinstance(v, float) else v)
                                            for k, v in got.items()), flush=True)
    if args.detail:
        print("  host us per generation:", " ".join("%s=%.1f" % (k, 1e6 * v / max(got["generations"], 1))
                                                   for k, v in sorted(detail.t.items())), flush=True)
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["dna64x50k"], choices=sorted(peers.DATASETS))
    ap.add_argument("--ngen", type=int, default=600)
    ap.add_argument("--precision", default="double", choices=("double", "single"))
    ap.add_argument("--asynchronous", action="store_true",
                    help="page-locked asynchronous flushes (choose_backend(asynchronous=True))")
    ap.add_argument("--device-time", action="store_true",
                    help="CUDA events around each flush: the device's busy time per generation (device_us)")
    ap.add_argument("--weights", default="real", choices=("real", "equal", "both"),
                    help="the jobs kernel's grid by the jobs' weights (real), evenly (equal), or both in turn")
    ap.add_argument("--waves", type=int, nargs="+", default=[1],
                    help="the jobs kernel's grid in waves of resident blocks (CudaBackend.jobs_waves), in turn")
    ap.add_argument("--rounds", type=int, default=1,
                    help="repeat every configuration this often, alternating, and print the medians")
    ap.add_argument("--detail", action="store_true", help="time CudaBackend's launch helpers (us per generation)")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N",
                    help="also print the N functions with the most own time (cProfile of the timed run)")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="mbgpu-gpuprof-")
    if args.asynchronous:
        import functools

        import mbgpu.likelihood.select as select

        select.choose_backend = functools.partial(select.choose_backend, asynchronous=True)
    from mbgpu.cuda.backend import CudaBackend

    for name in args.data:
        data = peers.prepare_data(name, os.path.join(work, "data"))
        run(data, 20, args.precision, tempfile.mkdtemp(dir=work))          # compile and warm up
        got: dict = {}
        for _round in range(args.rounds):
            for waves in args.waves:
                CudaBackend.jobs_waves = waves
                for weights in (("equal", "real") if args.weights == "both" else (args.weights,)):
                    key = "%s waves=%d" % (weights, waves)
                    if weights == "equal":
                        with EqualWeights():
                            got.setdefault(key, []).append(profile(data, args, work, key))
                    else:
                        got.setdefault(key, []).append(profile(data, args, work, key))
        if args.rounds > 1:
            for key, runs in got.items():
                rates = sorted(r["gen_per_s"] for r in runs)
                print("median %s data=%s gen_per_s=%.4g fraction_of_bound=%.4g (rounds: %s)" % (
                    key, name, float(np.median(rates)), float(np.median([r["fraction_of_bound"] for r in runs])),
                    " ".join("%.0f" % r for r in rates)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
