"""MPI_Allreduce for compiled code: a site-split group's ranks sum ParsSPR's integer counts inside the
compiled proposal (mbgpu.core.pars_spr), calling the MPI library by address (mbgpu.native_calls)."""
from __future__ import annotations

import ctypes

import numpy as np


def _handle(obj) -> int:
    """An mpi4py object's C handle as an int (an int in MPICH, a pointer in Open MPI)."""
    from mpi4py import MPI

    got = getattr(obj, "handle", None)
    return int(MPI._handleof(obj) if got is None else got) & 0xFFFFFFFFFFFFFFFF


def int64_sum(comm) -> np.ndarray:
    """uint64[6]: comm's size and this rank, then the address of MPI_Allreduce, comm's handle, MPI_INT64_T
    and MPI_SUM, the fields pars_spr's pass array takes after the thread count (PASS_RANKS ...)."""
    from mpi4py import MPI

    fn = ctypes.cast(ctypes.CDLL(MPI.__file__).MPI_Allreduce, ctypes.c_void_p).value
    return np.array([comm.Get_size(), comm.Get_rank(), fn, _handle(comm), _handle(MPI.INT64_T), _handle(MPI.SUM)],
                    dtype=np.uint64)
