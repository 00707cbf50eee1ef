"""Host (Python) cost of a batched generation, with a null device: everything the CUDA path does on the
host (moves, priors, staging, packing each flush into one blob, ParsSPR's tree program) and nothing on
a GPU, so the figure is the ceiling the host puts on generations/s, measurable on any machine.

The null backend packs every flush exactly as CudaBackend.batch_launch does (cuda.batch.pack_flush) and
returns a constant log likelihood; ParsSPR gets its tree program built and all-zero costs. With a flat
likelihood the chains walk the prior, so move acceptance differs from a real run: compare versions of
the code on this harness, and real runs with benchmarks/mcmc_gpu.py.

    python3 benchmarks/host_overhead.py [--cases dna,protein] [--gens 300] [--profile]
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mcmc_gpu import CASES, mcmc_block, simulate, write_nexus  # noqa: E402

from mbgpu.cuda.batch import pack_flush  # noqa: E402
from mbgpu.cuda.parsimony import tree_program  # noqa: E402

import numpy as np  # noqa: E402


class NullBackend:
    """The set-up calls and batched flush of CudaBackend, packed but not computed."""

    def __init__(self, spec):
        self.spec = spec

    def set_pattern_weights(self, weights) -> None:
        pass

    def set_tip_states(self, tip, states) -> None:
        pass

    def set_tip_partials(self, tip, partials) -> None:
        pass

    def batch_launch(self, matrix_groups, ops, counts, scale_jobs, root_calls, tag: str = ""):
        pack_flush(matrix_groups, ops, scale_jobs, root_calls, self.spec.n_states, self.spec.n_categories)
        return len(root_calls)

    def batch_fetch(self, handle) -> list[float]:
        return [-1000.0] * handle


class NullParsimony:
    """ParsSPR's GPU parsimony without the GPU: the tree program is built, every candidate costs 0."""

    def missed_weights(self, planes, adj, anchor, s, xs, ys, w, n_tips, rooted=None):
        tree_program(adj, anchor, s, n_tips, xs, ys, rooted)
        return np.zeros(len(xs))


def null_factory(spec):
    return NullBackend(spec)


null_factory.device = object()


def install_null_device() -> None:
    """Route the backend choice to the null device (as if a GPU were present)."""
    import mbgpu.likelihood.select as select
    import mbgpu.sampler.setup as setup

    select._cuda_available = lambda: True
    select._gpu_factory = lambda precision, device=None, asynchronous=False: null_factory
    setup._gpu_parsimony = lambda factory: NullParsimony()


GEN_LINE = re.compile(r"^\s+(\d+) -- [\[(]")


def run_case(name: str, gens: int, folder: str, profile: bool, pars: bool) -> float:
    """Generations per CPU second (process time: steadier than wall time on a shared machine) between the
    first and the last printed generation of one in-process run."""
    from mbgpu.cli import main

    case = CASES[name]
    states = simulate(case["n_taxa"], case["n_sites"], case["spec"], seed=5)
    data = os.path.join(folder, "%s.nex" % name)
    write_nexus(data, states, case["alphabet"], case["spec"].datatype)
    block = os.path.join(folder, "%s-run.nex" % name)
    with open(block, "w", encoding="ascii") as f:
        f.write(mcmc_block(case, data, gens, max(1, gens // 10), "").replace("filename=out", "filename=%s" % name))
    import mbgpu.moves.pars_spr as ps
    ps.ParsSPR.weight = 5.0 if pars else 0.0
    out, stamps = _Stamped(), []
    out.stamps = stamps
    prof = cProfile.Profile() if profile else None
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            (prof.runcall(main, [block]) if prof else main([block]))
    finally:
        os.chdir(cwd)
    if prof:
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(35)
        print(text.getvalue())
    (g0, t0), (g1, t1) = stamps[0], stamps[-1]
    return (g1 - g0) / (t1 - t0)


class _Stamped(io.StringIO):
    """stdout that timestamps the sampler's generation lines."""

    def write(self, s):
        for line in s.splitlines():
            m = GEN_LINE.match(line)
            if m:
                self.stamps.append((int(m.group(1)), time.process_time()))
        return super().write(s)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="dna,protein")
    ap.add_argument("--gens", type=int, default=300)
    ap.add_argument("--nopars", action="store_true", help="ParsSPR's weight 0")
    ap.add_argument("--profile", action="store_true", help="cProfile the run (rate then not meaningful)")
    args = ap.parse_args(argv)
    install_null_device()
    folder = tempfile.mkdtemp(prefix="host_overhead_")
    for name in args.cases.split(","):
        rate = run_case(name, args.gens, folder, args.profile, not args.nopars)
        print("%-8s %s host-only gen/s %.1f  (%.2f ms per generation of 8 chains)"
              % (name, "no ParsSPR" if args.nopars else "default moves", rate, 1e3 / rate), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
