"""The host side of a GPU generation of the compiled core, on any machine: the run takes the CUDA path
(DeviceDivision, packed flushes, two groups of chains) against a null device that takes each flush and
answers a constant log likelihood, so the generation rate is the ceiling the host puts on a GPU run.
With a flat likelihood the chains walk the prior (other acceptance than a real run): compare versions
of the code here, real runs with core_gpu_profile.py.

    python3 benchmarks/core_host_null.py --data dna64x50k [--ngen 800] [--cprofile 30]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers  # noqa: E402
from core_gpu_profile import metered_run  # noqa: E402


class NullDevice:
    """The CudaBackend calls a run makes, computing nothing: every log likelihood is -1e4."""

    real = 8
    LNL = -1.0e4

    def __init__(self, spec):
        self.spec = spec
        self.tip_partials = [None] * spec.n_tips

    def __getattr__(self, name):            # set-up and compute calls: accepted, ignored
        if name.startswith("_") or name in ("inner", "partials", "staging"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None

    def root_log_likelihood(self, *args) -> float:
        return self.LNL

    def root_log_likelihoods(self, calls) -> list:
        return [self.LNL] * len(list(calls))

    def launch_packed(self, flush, tag: str = ""):
        return flush.sizes[5] // 4

    def batch_launch(self, *args, **kwargs):
        return len(args[4])

    def batch_fetch(self, handle) -> list:
        return [self.LNL] * handle


def run(data: dict, ngen: int, folder: str) -> dict:
    import mbgpu.likelihood.select as select

    saved = select._gpu_factory, select._cuda_available
    select._gpu_factory = lambda precision, device=None, asynchronous=False: NullDevice
    select._cuda_available = lambda: True
    try:
        meter, _wall = metered_run(data, ngen, "backend=gpu", 500, folder)
    finally:
        select._gpu_factory, select._cuda_available = saved
    per_gen, g = meter.per_generation()
    return {"data": data["name"], "generations": ngen, "gen_per_s": 1.0 / per_gen, "step_us": 1e6 * per_gen,
            "plan_us": 1e6 * meter.t[0] / g, "launch_us": 1e6 * meter.t[1] / g, "ops": meter.ops / g}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["dna64x50k"], choices=sorted(peers.DATASETS))
    ap.add_argument("--ngen", type=int, default=800)
    ap.add_argument("--cprofile", type=int, default=0, metavar="N",
                    help="also print the N functions with the most own time (cProfile of the timed run)")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="mbgpu-hostnull-")
    for name in args.data:
        data = peers.prepare_data(name, os.path.join(work, "data"))
        run(data, 20, tempfile.mkdtemp(dir=work))                 # compile and warm up
        t0 = time.perf_counter()
        if args.cprofile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            got = prof.runcall(run, data, args.ngen, tempfile.mkdtemp(dir=work))
            pstats.Stats(prof).sort_stats("tottime").print_stats(args.cprofile)
        else:
            got = run(data, args.ngen, tempfile.mkdtemp(dir=work))
        got["wall_s"] = time.perf_counter() - t0
        print(" ".join("%s=%s" % (k, ("%.4g" % v) if isinstance(v, float) else v) for k, v in got.items()),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
