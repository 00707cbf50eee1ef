"""Was this process started by an MPI launcher, and the world communicator if so.

`mpirun -np N mbgpu ...` or `srun mbgpu ...` must never silently run N independent copies: when the
launcher's environment says N > 1 but mpi4py is missing, or mpi4py's MPI sees a world of 1 (it was
built against another MPI than the launcher), we stop with one line saying what to change.
mpi4py is imported only here, inside functions.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Mapping

from mbgpu.errors import MbgpuError

# Environment variables that launchers set in every process they start, with the world size.
SIZE_KEYS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS")
# Variables that only say "a launcher started me" (the size comes from MPI itself).
RANK_KEYS = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")


class MpiLaunchError(MbgpuError):
    """Started by an MPI launcher with several processes but no working MPI in this Python."""


def launched_size(env: Mapping[str, str] | None = None) -> int | None:
    """The world size the launcher announced; 0 when launched but the size is unknown; None if not launched.

    SLURM_STEP_NUM_TASKS counts only inside an `srun` step (a batch script's own shell is not a step).
    """
    env = os.environ if env is None else env
    for key in SIZE_KEYS:
        if key == "SLURM_STEP_NUM_TASKS" and "SLURM_STEP_ID" not in env:
            continue
        if key == "MPI_LOCALNRANKS":   # per node only: a hint that we were launched, not the world size
            continue
        value = env.get(key, "").strip()
        if value.isdigit():
            return int(value)
    return 0 if any(k in env for k in RANK_KEYS) else None


def launched(env: Mapping[str, str] | None = None) -> bool:
    """True when an MPI launcher (mpirun, mpiexec, srun) started this process."""
    return launched_size(env) is not None


def _import_mpi():
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI


def world(env: Mapping[str, str] | None = None):
    """COMM_WORLD when launched under MPI and mpi4py works; None for a plain serial run.

    Raises MpiLaunchError when the launcher started N > 1 processes that could not form one world.
    """
    size = launched_size(env)
    if size is None:
        return None
    if env is None:                      # this process, not a test's environment
        passive_openmp_threads()
    mpi = _import_mpi()
    if mpi is None:
        if size == 1:
            return None
        raise MpiLaunchError("started by an MPI launcher (%s processes) but mpi4py is not installed: install "
                             "mbgpu[mpi] (mpi4py built against this cluster's MPI: docs/hpc.md) or run mbgpu "
                             "without mpirun/srun, otherwise every process would run the whole analysis"
                             % (size or "several"))
    comm = mpi.COMM_WORLD
    if size > 1 and comm.Get_size() != size:
        raise MpiLaunchError("the launcher started %d processes but mpi4py's MPI (%s) sees a world of %d: mpi4py "
                             "was built for another MPI than this mpirun/srun; use the matching launcher or "
                             "reinstall mpi4py against this MPI" % (size, mpi.Get_library_version().split("\n")[0]
                                                                    .strip(), comm.Get_size()))
    return comm


def passive_openmp_threads() -> None:
    """OMP_WAIT_POLICY=passive for this MPI rank unless the user set it: numba's OpenMP worker threads then
    sleep between parallel regions instead of spinning. Under mpiexec the spinning made each compiled
    parallel region 10-250x slower (a 4-block loop: 34 us passive vs 360-8400 us active on the 2-core
    development machine; serially both ~35 us). Set before numba's threading layer starts (libgomp reads
    it when it loads)."""
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def abort(comm, rank: int, err: BaseException) -> None:
    """Print one line naming the rank and the error, then stop every rank of the job (MPI.Abort)."""
    text = err.one_line() if isinstance(err, MbgpuError) else "%s: %s" % (type(err).__name__, err)
    text = " ".join(str(text).split())
    if text.startswith("mbgpu: error: "):
        text = text[len("mbgpu: error: "):]
    sys.stdout.flush()
    print("mbgpu: MPI rank %d: error: %s (aborting all ranks)" % (rank, text), file=sys.stderr, flush=True)
    time.sleep(1.0)     # let the launcher forward the line before MPI_Abort tears the job down
    comm.Abort(2)


class NullConsole:
    """The console of ranks other than 0: screen output is printed once, by rank 0."""

    log = None
    log_name = ""

    def print(self, text: str = "") -> None:
        pass

    def start_log(self, path: str, append: bool) -> None:
        pass

    def stop_log(self) -> None:
        pass
