"""Sampler throughput on the CPU: generations/s of primates.nex under GTR+I+G, nchains=4 nruns=2 (the
figure the sampler issue asks for, next to MrBayes 3.2.7a's 2,681 gen/s on a 2-core machine).

Two runs of different lengths in fresh subprocesses with the numpy backend; the rate is the difference
in generations over the difference in wall time, so start-up (imports, data, initial state) cancels.

    python benchmarks/mcmc_cpu.py [--short 200] [--long 1200] [--nchains 4] [--nruns 2]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "configs" / "examples" / "primates.nex"
MRBAYES_GEN_PER_S = 2681.0   # MrBayes 3.2.7a, same block, 2-core machine of the CI kind (from the issue)


def block(ngen: int, nchains: int, nruns: int) -> str:
    return ("begin mrbayes;\n set autoclose=yes nowarn=yes seed=7 swapseed=8;\n lset nst=6 rates=invgamma;\n"
            " mcmc ngen=%d nchains=%d nruns=%d samplefreq=100 printfreq=100 diagnfreq=1000 filename=bench;\n"
            "end;\n" % (ngen, nchains, nruns))


def timed_run(folder: Path, ngen: int, nchains: int, nruns: int) -> float:
    """Wall seconds of `python -m mbgpu` on the example's data with the benchmark block."""
    data = EXAMPLE.read_text()
    data = data[: data.lower().index("begin mrbayes")]
    (folder / "run.nex").write_text(data + block(ngen, nchains, nruns))
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mbgpu", "--backend=cpu", "run.nex"], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", type=int, default=200)
    ap.add_argument("--long", type=int, default=1200)
    ap.add_argument("--nchains", type=int, default=4)
    ap.add_argument("--nruns", type=int, default=2)
    a = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="mbgpu_bench_"))
    try:
        t_short = timed_run(folder, a.short, a.nchains, a.nruns)
        t_long = timed_run(folder, a.long, a.nchains, a.nruns)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rate = (a.long - a.short) / (t_long - t_short)
    print("primates.nex GTR+I+G, nchains=%d nruns=%d, numpy backend" % (a.nchains, a.nruns))
    print("  %d gens: %.1f s   %d gens: %.1f s" % (a.short, t_short, a.long, t_long))
    print("  mbgpu: %.1f gen/s (%.2f ms per chain-step)" % (rate, 1000.0 / (rate * a.nchains * a.nruns)))
    print("  MrBayes 3.2.7a (issue figure, 2 cores): %.0f gen/s; ratio mbgpu/MrBayes = %.3f"
          % (MRBAYES_GEN_PER_S, rate / MRBAYES_GEN_PER_S))
    return 0


if __name__ == "__main__":
    sys.exit(main())
