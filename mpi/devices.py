"""Which GPU a rank uses, and compiling kernels once per node.

Rule (documented in docs/hpc.md):
1. `MBGPU_DEVICE` set: an index (every rank of the node uses it) or a comma list `0,2,3` (local rank i
   takes entry i mod length) -- the explicit override;
2. otherwise local rank i (ranks of one node, from an `MPI.COMM_TYPE_SHARED` split) takes device
   i mod (number of visible devices); under `CUDA_VISIBLE_DEVICES` / `srun --gpus-per-task=1` a rank sees
   one device, so this is device 0 and several ranks may share one GPU.
The choice is passed to the backend through `MBGPU_DEVICE` in this process' environment, which
`mbgpu.cuda.context.open_device()` reads.
"""
from __future__ import annotations

import os
from typing import Mapping

from mbgpu.errors import DeviceError


def local_comm(comm):
    """The ranks of `comm` that share this node's memory (MPI.COMM_TYPE_SHARED split)."""
    from mpi4py import MPI

    return comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())


def pick_device(local_rank: int, visible: int, env: Mapping[str, str]) -> tuple[int, str]:
    """(device index, why) for a rank; raises DeviceError for an override that names no visible device.

    >>> pick_device(3, 2, {})
    (1, 'local rank 3 of the node, 2 visible devices')
    >>> pick_device(1, 4, {"MBGPU_DEVICE": "2,3"})
    (3, 'MBGPU_DEVICE=2,3')
    """
    text = env.get("MBGPU_DEVICE", "").strip()
    if text:
        try:
            choices = [int(x) for x in text.split(",")]
        except ValueError:
            raise DeviceError("MBGPU_DEVICE must be a device index or a comma list of indices, not %r" % text) from None
        index = choices[local_rank % len(choices)]
        if not 0 <= index < visible:
            raise DeviceError("MBGPU_DEVICE=%s names device %d but %d device(s) are visible (CUDA_VISIBLE_DEVICES=%s)"
                              % (text, index, visible, env.get("CUDA_VISIBLE_DEVICES", "unset")))
        return index, "MBGPU_DEVICE=%s" % text
    if visible < 1:
        raise DeviceError("no CUDA device is visible to this rank (CUDA_VISIBLE_DEVICES=%s)"
                          % env.get("CUDA_VISIBLE_DEVICES", "unset"))
    return local_rank % visible, "local rank %d of the node, %d visible devices" % (local_rank, visible)


def assign_device(local_rank: int) -> str:
    """Choose this rank's GPU, export it as MBGPU_DEVICE, and return a label for the layout table."""
    from mbgpu.cuda.context import list_devices

    devices = list_devices()
    index, _why = pick_device(local_rank, len(devices), os.environ)
    os.environ["MBGPU_DEVICE"] = str(index)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    physical = visible.split(",")[index] if visible and len(visible.split(",")) > index else str(index)
    return "cuda:%d (%s, physical %s)" % (index, devices[index].name, physical)


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
