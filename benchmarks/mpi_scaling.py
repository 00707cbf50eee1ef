"""MPI scaling of the MC3 sampler: generations/s of `mcmc nchains=4 nruns=2` (8 chains; --nruns/--nchains)
with 1, 2, 4, 8 ranks (one visible GPU per local rank, shared when fewer), on simulated protein data (40 taxa
x 20k sites, WAG+G4) or DNA (--case dna: 64 taxa x 50k sites, GTR+I+G).

Each rank count runs `mpirun -np N python -m mbgpu.mpi run.nex` in a fresh folder; the rate is measured
between the first screen line after generation 0 and the last on rank 0's screen, so start-up (data,
kernels, initial state, a first generation's numba cache loads) is not counted. (Until 2026-11-28 the
window began at the layout table, before the ranks built their chains: multi-rank rates were too low.) The .p files of every rank count are compared with the 1-rank run's.

    python3 benchmarks/mpi_scaling.py [--ranks 1,2,4,8] [--ngen 400] [--backend gpu|cpu] [--scale 1.0]
                                      [--case dna|protein] [--nruns 2] [--nchains 4] [--split]
                                      [--profile DIR] [--flushes blocks|compiled|pycuda] [--whole-pars]
                                      [--checks paced|fixed] [--streams one|two]
                                      [--groups 2]

--split runs every rank count N with `set sitesplit=N` (one group: each rank holds 1/N of the patterns of
every chain), the issue's case (b); without it the chains are spread over the ranks.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcmc_gpu import CASES, simulate, write_nexus  # noqa: E402  (the same simulated data as mcmc_gpu.py)

# a chain line (`  375 -- [-1234.56] (-1240.12) ...`), not the layout table's `  0 -- (1,1) (1,2) -- device`
GEN_LINE = re.compile(r"^\s+(\d+) -- [\[(]-?\d+\.\d+[\])]")


def launcher(n: int) -> list[str]:
    """mpirun/mpiexec with the flags Open MPI needs to put N ranks on one host (as root in containers)."""
    here = os.path.dirname(sys.executable)       # a virtual environment with the mpich wheel
    exe = shutil.which("mpiexec", path=here) or shutil.which("mpirun") or shutil.which("mpiexec")
    if exe is None:
        raise SystemExit("no mpirun/mpiexec on PATH")
    text = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    flags = []
    if "Open MPI" in text or "OpenRTE" in text:
        flags = ["--oversubscribe", "--bind-to", "none"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return [exe, *flags, "-np", str(n)]


def block(data: str, case: dict, ngen: int, nruns: int = 2, nchains: int = 4, extra: str = "") -> str:
    printfreq = max(1, ngen // 4)
    return ("#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes seed=11 swapseed=12;\n  execute %s;\n  %s %s\n"
            "  mcmcp nchains=%d nruns=%d;\n  %s\n"
            "  mcmc ngen=%d samplefreq=%d printfreq=%d diagnfreq=%d checkpoint=no "
            "filename=out;\nend;\n" % (data, case["lset"], case["prset"], nchains, nruns, extra, ngen, printfreq,
                                        printfreq, ngen))


PROFILED = ("import cProfile, os, runpy, sys; rank = os.environ.get('OMPI_COMM_WORLD_RANK') or "
            "os.environ.get('PMI_RANK', '0'); sys.argv = ['mbgpu.mpi'] + sys.argv[2:]; "
            "cProfile.run('runpy.run_module(\"mbgpu.mpi\", run_name=\"__main__\")', sys.argv_out % rank)")


SETTINGS = {"pycuda": "from mbgpu.core.device_division import DeviceDivision; DeviceDivision.compiled_flushes = False",
            "compiled": "from mbgpu.core.device_block import DeviceBlockRunner; DeviceBlockRunner.enabled = False"}


WHOLE_PARS = "from mbgpu.core.stepper import CoreStepper; CoreStepper.split_pars = False"
FIXED_CHECKS = "from mbgpu.mpi.stop_check import StopCheck; StopCheck.paced = False"
TWO_STREAMS = "from mbgpu.cuda.core_flush import CoreFlushes; CoreFlushes.block_streams = True"
TIMING = "import sys; sys.path.insert(0, %r); import block_timing; block_timing.install()" % \
    os.path.dirname(os.path.abspath(__file__))
GROUPS = "import sys; sys.path.insert(0, %r); import device_groups; device_groups.install(%%d)" % \
    os.path.dirname(os.path.abspath(__file__))


def rank_settings(flushes: str = "blocks", whole_pars: bool = False, checks: str = "paced",
                  streams: str = "one", groups: int = 2) -> list[str]:
    """The class settings each rank sets before it runs: flushes 'blocks' (the product's): compiled blocks
    of generations, 'compiled': generation by generation with compiled flushes (DeviceBlockRunner.enabled
    off), 'pycuda': generation by generation, the flushes through pycuda's calls
    (DeviceDivision.compiled_flushes off); `whole_pars`: every rank of a site-split group runs ParsSPR's
    whole Fitch pass (CoreStepper.split_pars off); checks 'fixed': a stop-signal check (and so a block end)
    every STOP_EVERY generations, as before 2026-11-29, instead of paced by the blocks (StopCheck.paced);
    streams 'two': a block's two groups on two streams (CoreFlushes.block_streams; default: both on the
    default stream); `groups`: a GPU rank's chains in that many groups (device_groups; the core's: 2).
    Every rank also reports its time in blocks and waiting for the GPU (block_timing)."""
    return ([SETTINGS[flushes]] if flushes in SETTINGS else []) + ([WHOLE_PARS] if whole_pars else []) + \
        ([FIXED_CHECKS] if checks == "fixed" else []) + ([TWO_STREAMS] if streams == "two" else []) + \
        ([GROUPS % groups] if groups != 2 else []) + [TIMING]


def rank_command(backend: str, profile: str | None, settings: list[str]) -> list[str]:
    """One rank's command, with `settings` (rank_settings) made first; with `profile` a cProfile of each
    rank written to profile % rank."""
    args = ["--backend=%s" % backend, "run.nex"]
    if profile is not None:
        code = "; ".join(settings + [PROFILED.replace("sys.argv_out", repr(profile))])
        return [sys.executable, "-c", code, profile] + args
    if settings:
        return [sys.executable, "-c", "import runpy, sys; %s; sys.argv = ['mbgpu.mpi'] + sys.argv[1:]; "
                "runpy.run_module('mbgpu.mpi', run_name='__main__')" % "; ".join(settings)] + args
    return [sys.executable, "-m", "mbgpu.mpi"] + args


def run_ranks(folder: str, data: str, case: dict, n: int, ngen: int, backend: str, runs: tuple = (2, 4, ""),
              profile: str | None = None, settings: list[str] = ()) -> dict:
    work = os.path.join(folder, "np%d" % n)
    os.makedirs(work, exist_ok=True)
    for f in os.listdir(work):
        if f.startswith("block_timing.rank"):
            os.remove(os.path.join(work, f))
    with open(os.path.join(work, "run.nex"), "w", encoding="ascii") as f:
        f.write(block(data, case, ngen, *runs))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.time()
    prof = os.path.join(profile, "np%d.rank%%s.prof" % n) if profile else None
    if profile:
        os.makedirs(profile, exist_ok=True)
    proc = subprocess.Popen(launcher(n) + rank_command(backend, prof, list(settings)), cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stamps, lines = [], []
    for line in proc.stdout:
        lines.append(line)
        m = GEN_LINE.match(line)
        if m:
            stamps.append((int(m.group(1)), time.time()))
    proc.wait()
    if proc.returncode != 0:
        return {"n": n, "error": "".join(lines)[-3000:]}
    stamps = [x for x in stamps if x[0] > 0] or stamps    # from the first line after generation 0: no start-up
    if len(stamps) < 2:
        return {"n": n, "error": "fewer than two screen lines after generation 0 (lower printfreq)"}
    (g0, t0), (g1, t1) = stamps[0], stamps[-1]
    devices = sorted({l.rsplit(" -- ", 1)[-1].strip() for l in lines if re.match(r"^\s+\d+ -- \(\d+,\d+\)", l)})
    return {"n": n, "gens": g1 - g0, "rate": (g1 - g0) / (t1 - t0), "wall": time.time() - start, "devices": devices,
            "p": open(os.path.join(work, "out.run1.p" if runs[0] > 1 else "out.p"), "rb").read(),
            "timing": [open(os.path.join(work, f), encoding="ascii").read().strip()
                       for f in sorted(os.listdir(work)) if f.startswith("block_timing.rank")]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1,2,4,8")
    ap.add_argument("--ngen", type=int, default=400)
    ap.add_argument("--backend", default="gpu", choices=("gpu", "cpu"))
    ap.add_argument("--case", default="protein", choices=sorted(CASES))
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the site count (quick local checks)")
    ap.add_argument("--nruns", type=int, default=2)
    ap.add_argument("--nchains", type=int, default=4)
    ap.add_argument("--extra", default="", help="commands before mcmc, e.g. 'propset ParsSPR(Tau,V)$prob=0;'")
    ap.add_argument("--split", action="store_true", help="N ranks split the patterns N ways (set sitesplit=N)")
    ap.add_argument("--profile", metavar="DIR", help="cProfile every rank into DIR/npN.rankR.prof")
    ap.add_argument("--whole-pars", action="store_true",
                    help="with --split: every rank runs ParsSPR's whole Fitch pass (CoreStepper.split_pars off)")
    ap.add_argument("--flushes", default="blocks", choices=("blocks", "compiled", "pycuda"),
                    help="GPU ranks run compiled blocks of generations (default), or generation by generation "
                         "with compiled flushes, or with pycuda's calls")
    ap.add_argument("--checks", default="paced", choices=("paced", "fixed"),
                    help="stop-signal checks (block ends) paced by the blocks (default) or every 10 generations")
    ap.add_argument("--groups", type=int, default=2, choices=(1, 2),
                    help="a GPU rank's chains in one group or two (the core's: 2; the blocks hold two)")
    ap.add_argument("--streams", default="one", choices=("one", "two"),
                    help="a device block's two groups both on the default stream (default) or on two streams")
    args = ap.parse_args(argv)
    case = CASES[args.case]
    folder = tempfile.mkdtemp(prefix="mpi_scaling_")
    n_sites = max(100, int(case["n_sites"] * args.scale))
    data = os.path.join(folder, "data.nex")
    write_nexus(data, simulate(case["n_taxa"], n_sites, case["spec"], seed=5), case["alphabet"], case["spec"].datatype)
    print("%s %d taxa x %d sites, %d runs x %d chains%s, %d generations, backend %s; %d CPU cores usable (of %d)"
          % (args.case, case["n_taxa"], n_sites, args.nruns, args.nchains, ", sites split over the ranks"
             if args.split else "", args.ngen, args.backend,
             len(os.sched_getaffinity(0)), os.cpu_count()))
    print("%5s %8s %9s %8s %9s %6s  %s" % ("ranks", "gens", "gen/s", "speedup", "wall s", "same", "devices"))
    base = None
    for n in [int(x) for x in args.ranks.split(",")]:
        extra = args.extra + (" set sitesplit=%d;" % n if args.split else "")
        r = run_ranks(folder, data, case, n, args.ngen, args.backend, (args.nruns, args.nchains, extra),
                      os.path.abspath(args.profile) if args.profile else None,
                      rank_settings(args.flushes, args.whole_pars, args.checks, args.streams,
                                    args.groups))
        if "error" in r:
            print("%5d failed:\n%s" % (n, r["error"]), flush=True)
            continue
        base = base or r
        print("%5d %8d %9.1f %7.2fx %9.1f %6s  %s" % (n, r["gens"], r["rate"], r["rate"] / base["rate"], r["wall"],
                                                   "yes" if r["p"] == base["p"] else "NO", "; ".join(r["devices"])),
              flush=True)
        for line in r["timing"]:
            print("      " + line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
