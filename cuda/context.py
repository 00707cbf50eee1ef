"""Explicit CUDA device selection (never pycuda.autoinit): open a device by index, run inside its context.

A `Device` holds the primary context of one GPU; use it as a context manager around work so the
context is pushed and popped on the calling thread.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import DeviceError


def _driver():
    try:
        import pycuda.driver as drv
    except ImportError as exc:  # pycuda is the optional `gpu` extra
        raise DeviceError("pycuda is not installed; install mbgpu[gpu] or use the CPU backend") from exc
    try:
        drv.init()
    except Exception as exc:  # driver missing or no device node
        raise DeviceError("the CUDA driver could not be initialised: %s" % exc) from exc
    return drv


def cuda_available() -> bool:
    """True when pycuda imports and at least one CUDA device is visible."""
    try:
        return _driver().Device.count() > 0
    except DeviceError:
        return False


@dataclass(frozen=True)
class DeviceInfo:
    """What `mbgpu --devices` prints for one GPU."""

    index: int
    name: str
    total_bytes: int
    compute_capability: tuple[int, int]


def list_devices() -> list[DeviceInfo]:
    """Every visible CUDA device with its memory and compute capability."""
    drv = _driver()
    out = []
    for i in range(drv.Device.count()):
        d = drv.Device(i)
        out.append(DeviceInfo(i, d.name(), d.total_memory(), d.compute_capability()))
    return out


class Device:
    """One GPU's primary context; `with dev:` makes it current on this thread."""

    def __init__(self, index: int | None = None):
        drv = _driver()
        count = drv.Device.count()
        if index is None:
            index = 0
        if not 0 <= index < count:
            raise DeviceError("CUDA device %d does not exist (%d visible)" % (index, count))
        self.index = index
        self.device = drv.Device(index)
        self.context = self.device.retain_primary_context()
        self._depth = 0

    @property
    def arch(self) -> str:
        """The nvcc target for this device, e.g. `sm_90`."""
        major, minor = self.device.compute_capability()
        return "sm_%d%d" % (major, minor)

    def mem_get_info(self) -> tuple[int, int]:
        """(free, total) bytes on this device."""
        import pycuda.driver as drv

        with self:
            return drv.mem_get_info()

    def __enter__(self) -> "Device":
        self.context.push()
        self._depth += 1
        return self

    def __exit__(self, *exc) -> None:
        import pycuda.driver as drv

        self._depth -= 1
        drv.Context.pop()


def open_device(index: int | None = None) -> Device:
    """Open GPU `index` (None: device 0; the caller picks: the MPI layer one per rank, mbgpu.mpi.devices,
    a tool its --device) without making it current. CUDA_VISIBLE_DEVICES decides what the indices name."""
    return Device(index)
