"""Which GPU a rank uses, and compiling kernels once per node.

Rule (documented in docs/hpc.md): local rank i (ranks of one node, from an `MPI.COMM_TYPE_SHARED` split)
takes device i mod (number of visible devices). `CUDA_VISIBLE_DEVICES` says which devices are visible and
in which order, so `CUDA_VISIBLE_DEVICES=0,2,3` gives local rank i physical device 0, 2 or 3 (i mod 3),
and under `srun --gpus-per-task=1` a rank sees one device, its own (several ranks may share one GPU).
The chosen index is passed explicitly to the backend factory (mbgpu.likelihood.select.choose_backend's
`device`), which opens that device.
"""
from __future__ import annotations

import os

from mbgpu.errors import DeviceError


def local_comm(comm):
    """The ranks of `comm` that share this node's memory (MPI.COMM_TYPE_SHARED split)."""
    from mpi4py import MPI

    return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())


def pick_device(local_rank: int, visible: int, cuda_visible: str | None = None) -> tuple[int, str]:
    """(device index, why) for a rank with `visible` devices (`cuda_visible`: $CUDA_VISIBLE_DEVICES, for
    the message); raises DeviceError when no device is visible.

    >>> pick_device(3, 2)
    (1, 'local rank 3 of the node, 2 visible devices')
    """
    if visible < 1:
        raise DeviceError("no CUDA device is visible to this rank (CUDA_VISIBLE_DEVICES=%s)"
                          % (cuda_visible if cuda_visible is not None else "unset"))
    return local_rank % visible, "local rank %d of the node, %d visible devices" % (local_rank, visible)


def assign_device(local_rank: int) -> tuple[int, str]:
    """This rank's GPU: (device index to pass to the backend factory, label for the layout table)."""
    from mbgpu.cuda.context import list_devices

    devices = list_devices()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    index, _why = pick_device(local_rank, len(devices), visible)
    physical = visible.split(",")[index] if visible and len(visible.split(",")) > index else str(index)
    return index, "cuda:%d (%s, physical %s)" % (index, devices[index].name, physical)


def compile_once_per_node(local, build):
    """Run `build()` on local rank 0 first (it fills the kernel cache), then on the other ranks of the node.

    So 64 ranks starting at once do not all run nvcc on the same kernels; returns build()'s value.
    """
    if local.Get_rank() == 0:
        out = build()
        local.Barrier()
        return out
    local.Barrier()
    return build()


def share_cores(local_size: int) -> int:
    """Hold the compiled core's threads per rank to the node's numba threads shared by its ranks, so that
    `mpirun -np N` on N cores does not start N threads on every rank. Returns the count."""
    import numba

    n = max(1, numba.config.NUMBA_NUM_THREADS // max(1, local_size))
    numba.set_num_threads(n)
    return n
