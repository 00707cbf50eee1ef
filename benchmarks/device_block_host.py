"""The host's share of a GPU rank's generation, measured without a GPU: mpi_scaling.py's data run in
compiled device blocks (mbgpu.core.device_block) on the test suite's CUDA stand-in
(tests/test_core/host_driver.py) with a null device: every flush answers a constant lnL, so the chains
walk the prior (other acceptance than a real run; the same caveat as core_host_null.py, which measures the
per-generation path). A cProfile of the run gives run_device_block's own time, which leaves out the
driver's calls (Python functions) but holds ctypes' way into them (a few us each, ~14 a generation): per
generation, the compiled host work a GPU rank does for its chains (propose, plan, queue, collect,
decide, swaps), on this machine's cores.

    python3 benchmarks/device_block_host.py [--nruns 1 4] [--nchains 8] [--ngen 300] [--scale 1.0]
                                            [--extra 'propset ParsSPR(Tau,V)$prob=0;']

On a GPU a rank's generation takes max(host, device) plus what does not overlap: set the host share
printed here beside mpi_scaling.py's rate (and its block_timing waits) to see which side bounds it.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from mcmc_gpu import CASES, simulate, write_nexus  # noqa: E402


def null_driver():
    """The stand-in's driver with a null device: every root call answers lnL -1e4 and nothing is replayed
    (the replay's large temporaries, freed on the way back into compiled code, would count as its time)."""
    import ctypes

    import numpy as np

    from tests.test_core import host_driver

    class NullDriver(host_driver.HostDriver):
        def _replay(self, gx, n_roots, root_args):
            sums = np.zeros((n_roots, gx, 2))
            sums[:, 0, 0] = -1.0e4
            ctypes.memmove(root_args[13], sums.ctypes.data, sums.nbytes)

    return NullDriver


def run_case(folder: str, data: str, nruns: int, nchains: int, ngen: int, extra: str) -> dict:
    """One run on the stand-in under cProfile: the seconds spent in run_device_block's own compiled code
    (its tottime: the driver's calls are Python functions of their own, so their time is not in it, but
    ctypes' way into them is, a few us a call) and the generations it ran."""
    import mbgpu.likelihood.select as select
    from mbgpu.console import Console
    from mbgpu.core import device_block
    from mbgpu.interpreter import Interpreter
    from mbgpu.likelihood.numpy_backend import NumpyBackend
    from tests.test_core import host_driver

    case = CASES["dna"]
    counted = [0]
    old = (select._cuda_available, select._gpu_factory, device_block.DeviceBlockRunner.run, host_driver.HostDriver)
    host_driver.HostDriver = null_driver()
    select._cuda_available = lambda: True
    select._gpu_factory = lambda precision, device=None, asynchronous=False: \
        lambda spec: host_driver.CompiledPackedHost(NumpyBackend(spec))
    inner = old[2]

    def run(self, mc3, first, last):
        done = inner(self, mc3, first, last)
        counted[0] += done - first + 1
        return done

    device_block.DeviceBlockRunner.run = run
    nex = os.path.join(folder, "run%d.nex" % nruns)
    with open(nex, "w", encoding="ascii") as f:
        f.write("#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes seed=11 swapseed=12 backend=gpu;\n"
                " execute %s;\n %s %s\n mcmcp nchains=%d nruns=%d;\n %s\n mcmc ngen=%d samplefreq=%d printfreq=%d "
                "diagnfreq=%d checkpoint=no filename=out%d;\nend;\n"
                % (data, case["lset"], case["prset"], nchains, nruns, extra, ngen, ngen, ngen, ngen, nruns))
    cwd, prof = os.getcwd(), cProfile.Profile()
    try:
        os.chdir(folder)
        it = Interpreter(Console(io.StringIO()))
        prof.runcall(it.run_file, nex)
    finally:
        os.chdir(cwd)
        select._cuda_available, select._gpu_factory, device_block.DeviceBlockRunner.run, host_driver.HostDriver = old
    stats = pstats.Stats(prof).stats
    own = sum(v[2] for k, v in stats.items() if k[2] == "run_device_block")
    return {"host": own, "gens": counted[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nruns", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--nchains", type=int, default=8)
    ap.add_argument("--ngen", type=int, default=300)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--extra", default="")
    args = ap.parse_args()
    case = CASES["dna"]
    with tempfile.TemporaryDirectory(prefix="mbgpu-blockhost-") as folder:
        data = os.path.join(folder, "data.nex")
        n_sites = max(100, int(case["n_sites"] * args.scale))
        write_nexus(data, simulate(case["n_taxa"], n_sites, case["spec"], seed=5), case["alphabet"],
                    case["spec"].datatype)
        for nruns in args.nruns:
            r = run_case(folder, data, nruns, args.nchains, args.ngen, args.extra)
            per = 1e3 * r["host"] / max(1, r["gens"])
            print("dna 64x%d %d runs x %d chains: %d generations in blocks, host %.3f ms a generation, "
                  "%.1f us a chain%s" % (n_sites, nruns, args.nchains, r["gens"], per,
                                         1e3 * per / (nruns * args.nchains), " (" + args.extra + ")"
                                         if args.extra else ""), flush=True)


if __name__ == "__main__":
    main()
