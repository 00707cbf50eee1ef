"""`mpirun -np N mbgpu file.nex`: rank 0 reads the commands, the other ranks serve its `mcmc` commands.

Rank 0 runs the normal session (screen, log, sump/sumt, the prompt). When it reaches `mcmc` it
broadcasts the Settings; every rank then runs the one driver (mbgpu.run_driver.drive) with an
`MpiPlacement`: it builds only its own chains, and the distributed MC3 runs. A user error found before
the run raises the same MbgpuError on every rank; any other exception in the run, on any rank, prints
one line naming the rank and stops the whole job with MPI.Abort; the files and the last checkpoint
written by rank 0 stay as they were.
"""
from __future__ import annotations

from mbgpu.errors import MbgpuError
from mbgpu.mpi.comm import NullConsole, world

QUIT, MCMC = "quit", "mcmc"


def main(argv: list[str], run_cli) -> int:
    """Run the session `run_cli(argv)` under MPI when launched by mpirun/srun, else serially."""
    comm = world()
    if comm is None:
        return run_cli(argv)
    if comm.Get_rank() != 0:
        return serve(comm)
    try:
        return run_cli(argv)
    finally:
        comm.bcast((QUIT, None), root=0)


def serve(comm) -> int:
    """Ranks > 0: take part in every `mcmc` rank 0 starts, until it says quit."""
    while True:
        kind, job = comm.bcast(None, root=0)
        if kind == QUIT:
            return 0
        settings, ss = job
        from mbgpu.mpi.driver import MpiPlacement   # the sampler: imported at the first mcmc, not for every session
        from mbgpu.run_driver import drive

        try:
            drive(settings, NullConsole(), None, MpiPlacement(comm, settings), ss)
        except MbgpuError:
            pass   # raised identically on rank 0, which reports it


def lead(comm, settings, ss=None):
    """Rank 0 at an `mcmc` or `ss` command (seeds fixed already): send the settings (and an ss run's
    SsPlan) to the serving ranks; this rank's mbgpu.mpi.driver.MpiPlacement."""
    from mbgpu.mpi.driver import MpiPlacement   # the sampler: imported at the first mcmc, not for every session

    comm.bcast((MCMC, (settings, ss)), root=0)
    return MpiPlacement(comm, settings)
