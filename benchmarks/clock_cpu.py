"""Clock-tree sampler throughput on the CPU, side by side with MrBayes 3.2.7a: generations/s of the dating
example (configs/examples/primates_dating.nex: HKY+G, birth-death, free clock rate, one calibrated clade;
nruns=2 nchains=4), mbgpu and `mb` alternating over rounds.

Each program runs a short and a long analysis in fresh processes; the rate is the difference in generations
over the difference in wall time, so start-up cancels. Needs ../shared/peers/bin/mb (or --mb PATH).

    python benchmarks/clock_cpu.py [--short 500] [--long 3000] [--rounds 2] [--mb ../shared/peers/bin/mb]
                                   [--extra 'set beagleprecision=single;']
One core: `NUMBA_NUM_THREADS=1 taskset -c 3 python benchmarks/clock_cpu.py ...` (numba's threads otherwise
spread mbgpu's likelihood over every core, MrBayes runs on one).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "configs" / "examples" / "primates_dating.nex"


def command_file(ngen: int, extra: str = "") -> str:
    """The example with `ngen` generations, no sump/sumt and no checkpoints (`extra`: commands put before its
    `mcmc`, for both programs)."""
    text = EXAMPLE.read_text().replace("    mcmc ngen=20000", "    %s\n    mcmc ngen=%d checkpoint=no" % (extra, ngen))
    return text.replace("    sump;\n", "").replace("    sumt;\n", "")


def timed(cmd: list, folder: Path, ngen: int, extra: str = "") -> float:
    (folder / "run.nex").write_text(command_file(ngen, extra))
    t = time.perf_counter()
    subprocess.run(cmd + ["run.nex"], cwd=folder, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def rate(cmd: list, folder: Path, short: int, long: int, extra: str = "") -> float:
    return (long - short) / (timed(cmd, folder, long, extra) - timed(cmd, folder, short, extra))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", type=int, default=500)
    ap.add_argument("--long", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--mb", default=str(ROOT.parent / "shared" / "peers" / "bin" / "mb"))
    ap.add_argument("--extra", default="", help="commands before mcmc, e.g. 'set beagleprecision=single;'")
    a = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="mbgpu_clock_bench_"))
    ours, theirs = [sys.executable, "-m", "mbgpu", "--backend=cpu"], [a.mb]
    try:
        timed(ours, folder, 10, a.extra)                           # numba's first compile
        got = {"mbgpu": [], "MrBayes": []}
        for _ in range(a.rounds):
            got["mbgpu"].append(rate(ours, folder, a.short, a.long, a.extra))
            got["MrBayes"].append(rate(theirs, folder, a.short, a.long, a.extra))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("primates_dating.nex (HKY+G, birth-death, free clock rate, calibrated clade), nruns=2 nchains=4, CPU %s"
          % a.extra)
    for who, rates in got.items():
        print("  %-8s %s gen/s" % (who, "  ".join("%.0f" % r for r in rates)))
    ratio = max(got["mbgpu"]) / max(got["MrBayes"])
    print("  mbgpu / MrBayes (best rounds): %.3f" % ratio)
    return 0


if __name__ == "__main__":
    sys.exit(main())
