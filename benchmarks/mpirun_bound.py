"""All cores: mbgpu's speed-up from threads against the most MrBayes can get from `mpirun` on the same
cores, for a MrBayes built without MPI (../shared/peers has no MPI build).

    python3 benchmarks/mpirun_bound.py --data primates --cores 2 --ngen 4000 20000 --rounds 3 \
        --peers-dir ../shared/peers

MrBayes' MPI version gives each rank whole chains; with nruns=2 nchains=4 on P ranks each rank steps
8/P chains and the ranks exchange swap messages every generation. Its speed-up is therefore at most
that of P independent MrBayes processes run at the same time, each with 8/P of the chains and no
messages (nruns=2/P or nchains=4/(P/2)): the bound printed here. mbgpu runs the whole analysis in one
process on 1 and on --cores numba threads, and the same work without heat swaps (8 runs of one chain,
as uncoupled as the bound) on --cores threads: the gap between the two is the price of the swaps'
coupling, which a real mpirun pays too (MrBayes' AttemptSwap makes the two ranks of a swap wait for
each other's message every swap generation). Rates are (long - short generations) / (long - short wall
seconds), so start-up cancels; rounds alternate the order. MrBayes runs BEAGLE's CPU plugin in double
precision on one thread (the best one-process MrBayes on primates and DNA 50x2k, docs/performance.md).

With --mb-mpi DIR (a MrBayes built with MPI by benchmarks/build_mb_mpi.sh) it also times the real thing:
`DIR/bin/mpiexec -n 1` and `-n P` of `DIR/bin/mb-mpi` on the same 2 x 4 chains, and compares the
speed-ups: mbgpu's P threads over its one thread against MrBayes' P ranks over its one rank.

    python3 benchmarks/mpirun_bound.py --data primates --cores 8 --ngen 4000 24000 --rounds 5 \
        --peers-dir ../shared/peers --mb-mpi /tmp/mbmpi
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import peers  # noqa: E402

MB_SET = "set usebeagle=yes beagledevice=cpu beagleprecision=double beagleresource=0 beaglethreads=no;"


def nexus(data: dict, folder: str, tag: str, ngen: int, nruns: int, nchains: int, mb: bool) -> str:
    """A NEXUS file running `data` for ngen generations with nruns x nchains."""
    path = os.path.join(folder, "%s-%d.nex" % (tag, ngen))
    with open(path, "w") as f:
        f.write("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=5;\n%s\nexecute %s;\n"
                "%s %s\nmcmc ngen=%d nchains=%d nruns=%d samplefreq=500 printfreq=1000 diagnfreq=5000 "
                "filename=%s-%d;\nend;\n" % (MB_SET if mb else "", data["path"], data["lset"], data["prset"],
                                              ngen, nchains, nruns, tag, ngen))
    return path


def wall(commands: list[list[str]], env: dict, folder: str) -> float:
    """Seconds until every command (started together) has finished."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for c in commands]
    for p, c in zip(procs, commands):
        if p.wait() != 0:
            raise RuntimeError("%s failed (exit %d)" % (" ".join(c), p.returncode))
    return time.perf_counter() - t0


def rate(make, ngens: tuple[int, int]) -> float:
    """Generations of the whole 8-chain analysis per second from a short and a long run."""
    short, long_ = (make(n) for n in ngens)
    return (ngens[1] - ngens[0]) / (long_ - short)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="primates", choices=sorted(peers.DATASETS))
    ap.add_argument("--cores", type=int, default=os.cpu_count(), choices=(2, 4, 8))
    ap.add_argument("--ngen", type=int, nargs=2, default=(4000, 20000), metavar=("SHORT", "LONG"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peers-dir", default=os.path.join(peers.REPO, "..", "shared", "peers"))
    ap.add_argument("--mb-mpi", metavar="DIR", help="a MrBayes MPI build (benchmarks/build_mb_mpi.sh's OUT)")
    args = ap.parse_args()
    mb = os.path.join(os.path.abspath(args.peers_dir), "bin", "mb")
    p = args.cores
    nruns, nchains = (1, 4) if p == 2 else (1, 8 // p)
    with tempfile.TemporaryDirectory(prefix="mbgpu-mpibound-") as folder:
        data = peers.prepare_data(args.data, os.path.join(folder, "data"))
        env = dict(os.environ)

        def threads(n, runs=2, chains=4):
            e = dict(env, NUMBA_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n))
            return lambda g: wall([[sys.executable, "-m", "mbgpu", "--backend=cpu",
                                    nexus(data, folder, "t%d-%d" % (n, runs), g, runs, chains, False)]], e, folder)

        def mb_one(g):
            return wall([[mb, nexus(data, folder, "mb1", g, 2, 4, True)]], env, folder)

        def mb_split(g):
            return wall([[mb, nexus(data, folder, "mbp%d" % i, g, nruns, nchains, True)] for i in range(p)],
                        env, folder)

        def mb_mpi(ranks):
            where = os.path.abspath(args.mb_mpi)
            run = [os.path.join(where, "bin", "mpiexec"), "-n", str(ranks), os.path.join(where, "bin", "mb-mpi")]
            return lambda g: wall([run + [nexus(data, folder, "mpi%d" % ranks, g, 2, 4, True)]], env, folder)

        names = ("mbgpu 1 thread", "mbgpu %d threads" % p, "MrBayes 1 process",
                 "MrBayes %d processes (mpirun bound)" % p, "mbgpu %d threads, 8 runs x 1 chain (no swaps)" % p,
                 "MrBayes MPI build, 1 rank", "MrBayes mpirun, %d ranks" % p)
        makers = (threads(1), threads(p), mb_one, mb_split, threads(p, 8, 1), mb_mpi(1), mb_mpi(p))
        cases = dict(list(zip(names, makers))[:7 if args.mb_mpi else 5])
        got = {k: [] for k in cases}
        for n in (1, p):            # warm numba's cache: one thread and several compile different blocks
            rate(threads(n), (100, 200))
        for r in range(args.rounds):
            for name in (list(cases) if r % 2 == 0 else list(reversed(cases))):
                got[name].append(rate(cases[name], tuple(args.ngen)))
                print("round %d %-36s %8.1f gen/s" % (r + 1, name, got[name][-1]), file=sys.stderr, flush=True)
    report(args, {k: statistics.median(v) for k, v in got.items()}, names)


def report(args, med: dict, names: tuple) -> None:
    """The table of medians, each with its speed-up over the one-thread / one-process case of its kind."""
    p = args.cores
    base = {"mbgpu": names[0], "MrBayes MPI": names[5], "MrBayes mpirun": names[5], "MrBayes": names[2]}
    print("\n| %s, %d cores | gen/s (median of %d) | speed-up |" % (args.data, p, args.rounds))
    print("|---|---:|---:|")
    for name in med:
        kind = next(k for k in base if name.startswith(k))
        print("| %s | %.0f | %.2fx |" % (name, med[name], med[name] / med[base[kind]]))
    print("\nmbgpu on %d threads / MrBayes' mpirun bound on %d processes: %.2fx (without swaps, the bound's "
          "coupling: %.2fx)" % (p, p, med[names[1]] / med[names[3]], med[names[4]] / med[names[3]]))
    if names[6] in med:
        ours, theirs = med[names[1]] / med[names[0]], med[names[6]] / med[names[5]]
        print("speed-up on %d cores: mbgpu %.2fx, MrBayes mpirun %.2fx (ratio %.2f); mbgpu on %d threads / "
              "MrBayes mpirun on %d ranks: %.2fx" % (p, ours, theirs, ours / theirs, p, p, med[names[1]] / med[names[6]]))


if __name__ == "__main__":
    main()
