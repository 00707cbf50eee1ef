"""Checkpoint write time, size and resume time for a 500-taxon, 2-run x 4-chain analysis (CPU backend).

Random DNA (seeded) with 500 taxa; `mcmc checkfreq=1` so every generation writes a checkpoint; every
write is timed (capture + HDF5 + fsync + renames). Then the same with 2000 sampled trees per run in the
split counter (what a 1,000,000-generation run with samplefreq=500 holds), and the time `append=yes`
takes to read, verify and restore it (likelihood caches rebuilt).

    python benchmarks/checkpoint.py [--taxa 500] [--sites 1000] [--ngen 10]
"""
from __future__ import annotations

import argparse
import io
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mbgpu.checkpoint import session as ckpt_session  # noqa: E402
from mbgpu.console import Console  # noqa: E402
from mbgpu.interpreter import Interpreter  # noqa: E402


def random_nexus(n_taxa: int, n_sites: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    rows = ["  t%03d %s" % (i, "".join(rng.choice(list("ACGT"), size=n_sites))) for i in range(n_taxa)]
    return ("#NEXUS\nbegin data; dimensions ntax=%d nchar=%d; format datatype=dna; matrix\n%s\n;\nend;\n"
            % (n_taxa, n_sites, "\n".join(rows)))


def commands(ngen: int, extra: str = "") -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=1 swapseed=2; execute data.nex; lset nst=6 rates=invgamma;\n"
            " mcmc ngen=%d nruns=2 nchains=4 samplefreq=5 printfreq=1000 diagnfreq=1000 checkfreq=1 filename=b %s;"
            " end;\n" % (ngen, extra))


def run(folder: str, text: str, name: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(path)
    return out.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="checkpoint write/read benchmark")
    ap.add_argument("--taxa", type=int, default=500)
    ap.add_argument("--sites", type=int, default=1000)
    ap.add_argument("--ngen", type=int, default=10)
    ap.add_argument("--samples", type=int, default=2000, help="sampled trees per run in the second phase")
    a = ap.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="mbgpu_ckpbench_")
    os.chdir(folder)
    with open("data.nex", "w") as fh:
        fh.write(random_nexus(a.taxa, a.sites, 42))
    timings: list[float] = []
    real_write = ckpt_session.CheckpointSession.write

    def timed_write(self, mc3):
        t0 = time.perf_counter()
        real_write(self, mc3)
        timings.append(time.perf_counter() - t0)
        if len(timings) == a.ngen - 1:  # the last write holds a long run's split counter
            trees = self.sink.splits.samples
            for r in range(len(trees)):
                trees[r] = [trees[r][i % len(trees[r])] for i in range(a.samples + 1)]

    ckpt_session.CheckpointSession.write = timed_write
    t0 = time.perf_counter()
    run(folder, commands(a.ngen), "a.nex")
    t_run = time.perf_counter() - t0
    ckpt_session.CheckpointSession.write = real_write
    size_final = os.path.getsize("b.ckp.h5")
    size_early = os.path.getsize("b.ckp.h5~")  # the write before the last
    t0 = time.perf_counter()
    payload = ckpt_session.load("b.ckp.h5")
    t_read = time.perf_counter() - t0
    raw = sum(len(v.encode()) if isinstance(v, str) else v.nbytes for v in payload.values())
    t0 = time.perf_counter()
    run(folder, commands(a.ngen, "append=yes"), "b.nex")
    t_append = time.perf_counter() - t0
    print("machine: %s, %s, Python %s, %d CPUs" % (platform.node(), platform.processor() or platform.machine(),
                                                     platform.python_version(), os.cpu_count()))
    print("analysis: %d taxa x %d sites (random DNA), GTR+I+G, 2 runs x 4 chains, CPU backend" % (a.taxa, a.sites))
    print("%-52s %12s" % ("quantity", "value"))
    early = timings[:-1]
    print("%-52s %9.1f ms" % ("checkpoint write, few samples (median of %d)" % len(early),
                              1e3 * statistics.median(early)))
    print("%-52s %9.1f ms" % ("checkpoint write, min / max", 1e3 * min(early)) + "  / %.1f ms" % (1e3 * max(early)))
    print("%-52s %9.1f KiB" % ("checkpoint size, few samples", size_early / 1024))
    print("%-52s %9.1f ms" % ("checkpoint write, %d trees per run sampled" % (a.samples + 1), 1e3 * timings[-1]))
    print("%-52s %9.1f KiB" % ("checkpoint size, %d trees per run sampled" % (a.samples + 1), size_final / 1024))
    print("%-52s %9.1f KiB" % ("  of which payload (raw array bytes)", raw / 1024))
    print("%-52s %9.1f ms" % ("read + verify (fletcher32, sha256) that checkpoint", 1e3 * t_read))
    print("%-52s %9.2f s" % ("append=yes with nothing left to run (read, rebuild)", t_append))
    print("%-52s %9.2f s" % ("the run itself (%d generations, %d checkpoints)" % (a.ngen, len(timings)), t_run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
