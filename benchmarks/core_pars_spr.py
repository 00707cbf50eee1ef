"""Time the compiled core's ParsSPR proposal (mbgpu.core.pars_spr) on benchmarks/peers.py's data sets at
several thread counts (its Fitch pass runs in spans of words on numba's threads).

    python3 benchmarks/core_pars_spr.py --data prot40x20k dna64x50k --threads 1 4 16 [--calls 60]

Builds one chain's start state in this process (mbgpu on the CPU backend, ngen=1) and proposes
--calls times from copies of that state; prints the median and best microseconds a proposal and a
checksum of the candidate costs (the same for every thread count) and the minor page faults a
proposal (the copies of the tree's three arrays included: a few).
"""
from __future__ import annotations

import argparse
import io
import os
import resource
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numba  # noqa: E402
import numpy as np  # noqa: E402

import peers  # noqa: E402


def stepper_for(data: dict, folder: str):
    """The CoreStepper of a one-chain run of `data` (caught at its first proposal)."""
    from mbgpu.console import Console
    from mbgpu.core.stepper import CoreStepper
    from mbgpu.interpreter import Interpreter

    got, propose = [], CoreStepper._propose

    def grab(self, c0, c1):
        got.append(self)
        return propose(self, c0, c1)

    nex = os.path.join(folder, "one.nex")
    with open(nex, "w") as f:
        f.write("#NEXUS\nbegin mrbayes; set seed=5 swapseed=5 backend=cpu;\nexecute %s;\n%s %s\nmcmc ngen=1 "
                "nruns=1 nchains=1 samplefreq=1 printfreq=1 diagnfreq=1 filename=one; end;\n"
                % (data["path"], data["lset"], data["prset"]))
    cwd = os.getcwd()
    os.chdir(folder)
    CoreStepper._propose = grab
    try:
        Interpreter(Console(io.StringIO())).run_file(nex)
    finally:
        CoreStepper._propose = propose
        os.chdir(cwd)
    return got[0]


def time_proposals(st, threads: int, calls: int) -> tuple[float, float, float, float]:
    """(median us, best us, cost checksum, minor page faults a proposal after the first quarter) of
    `calls` ParsSPR proposals with numba's thread count at `threads` (the pass takes pars_threads of them):
    faults count fresh memory touched, e.g. scratch that malloc handed back to the system and maps again."""
    from mbgpu.core.pars_spr import PARS_SPR_TUNING, candidate_costs, pars_spr, pars_threads

    n = pars_threads(threads)              # as CoreStepper._propose holds numba's count
    numba.set_num_threads(n)
    pars = st.pars[0][:-1] + (st.pars[0][-1].copy(),)     # the first tree's data
    pars[-1][0] = n
    t, n_tips = st.trees, st.n_tips
    s = st.rng[0].copy()
    times = []
    for i in range(calls):
        if i == calls // 4:
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        p, k, b = t.parent[0].copy(), t.kids[0].copy(), t.brlen[0].copy()
        t0 = time.perf_counter()
        pars_spr(p, k, b, n_tips, s, PARS_SPR_TUNING, st.lo[0], st.hi[0], st.anchor, *pars)
        times.append(time.perf_counter() - t0)
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / (calls - calls // 4)
    u = n_tips + 3
    sub = int(np.flatnonzero(t.parent[0] == u)[0])
    cost = candidate_costs(t.parent[0], t.kids[0], t.brlen[0], n_tips, u, sub, st.anchor, PARS_SPR_TUNING,
                           pars[3], *pars)[2]
    return 1e6 * float(np.median(times[calls // 4:])), 1e6 * min(times), float(cost.sum()), faults


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["prot40x20k"], choices=sorted(peers.DATASETS))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, numba.config.NUMBA_NUM_THREADS])
    ap.add_argument("--calls", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mbgpu-parsspr-") as folder:
        for name in args.data:
            st = stepper_for(peers.prepare_data(name, os.path.join(folder, "data")), folder)
            for n in args.threads:
                med, best, check, faults = time_proposals(st, n, args.calls)
                print("data=%s threads=%d median_us=%.1f best_us=%.1f cost_checksum=%r faults=%.1f"
                      % (name, n, med, best, check, faults), flush=True)


if __name__ == "__main__":
    main()
