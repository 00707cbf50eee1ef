"""Calls into the CUDA driver (libcuda) from numba-compiled code, by address: a GPU rank's flushes are
queued and collected without returning to Python (mbgpu.cuda.core_flush).

pycuda's launches cost ~12 us of Python each and a flush's copy, launches, download and event ~70 us of
Python in all, which bound a GPU rank's generations (docs/performance.md, issue 23). Here a compiled
function calls the driver's entry points through their addresses, which are arguments (not constants), so
numba's on-disk cache stays valid across processes. The calls use the context current on the calling
thread: call inside the backend's `with dev:` (mbgpu.cuda.context.Device).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from mbgpu.errors import DeviceError
from mbgpu.native_calls import i64_call

# the entry points a compiled flush calls, in the order of `driver_table`'s array
ENTRY_POINTS = ("cuLaunchKernel", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuEventRecord",
                "cuEventSynchronize")
LAUNCH, HTOD, DTOH, RECORD, SYNC = range(len(ENTRY_POINTS))
CLOCK = len(ENTRY_POINTS)         # the table's last entry: libc's clock_gettime (a block's time waited)
CLOCK_MONOTONIC = 1
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_EVENT_DISABLE_TIMING = 2


def libcuda():
    """The driver library (the one pycuda has loaded: dlopen hands back the same handle)."""
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError as exc:
        raise DeviceError("cannot load the CUDA driver library (%s): %s" % (name, exc)) from None


def clock_address() -> int:
    """The address of libc's clock_gettime (compiled blocks time their waits for the device with it)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    return ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value


def driver_table(lib=None) -> np.ndarray:
    """int64 addresses of ENTRY_POINTS in `lib` (libcuda by default), then CLOCK's: the array compiled
    flushes take."""
    lib = libcuda() if lib is None else lib
    return np.array([ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in ENTRY_POINTS] +
                    [clock_address()], dtype=np.int64)


def check(result: int, what: str) -> None:
    """Raise DeviceError for a CUresult other than CUDA_SUCCESS."""
    if result != 0:
        raise DeviceError("CUDA driver error %d in %s" % (result, what))


class Driver:
    """The few driver calls made from Python when a compiled flush is set up: modules, functions and
    events of the current context (pycuda exposes none of their raw handles); `table`, the entry points
    compiled code calls."""

    def __init__(self):
        self.lib = libcuda()
        self.table = driver_table(self.lib)

    def function(self, cubin_path: str, name: str, dynamic_shared: int = 0) -> int:
        """A kernel's CUfunction from a cubin loaded into the current context (the module stays loaded
        with the context); allowed `dynamic_shared` bytes of shared memory when above the default 48 KiB."""
        module, func = ctypes.c_void_p(), ctypes.c_void_p()
        check(self.lib.cuModuleLoad(ctypes.byref(module), cubin_path.encode()), "cuModuleLoad")
        check(self.lib.cuModuleGetFunction(ctypes.byref(func), module, name.encode()), "cuModuleGetFunction")
        if dynamic_shared > 48 * 1024:
            check(self.lib.cuFuncSetAttribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              ctypes.c_int(dynamic_shared)), "cuFuncSetAttribute")
        return int(func.value)

    def event(self) -> int:
        """A new CUevent without timing (the compiled collect waits on it)."""
        ev = ctypes.c_void_p()
        check(self.lib.cuEventCreate(ctypes.byref(ev), CU_EVENT_DISABLE_TIMING), "cuEventCreate")
        return int(ev.value)

    def stream(self) -> int:
        """A new CUstream (blocking: it waits for the legacy default stream's work, and that for its)."""
        st = ctypes.c_void_p()
        check(self.lib.cuStreamCreate(ctypes.byref(st), 0), "cuStreamCreate")
        return int(st.value)

    def destroy_event(self, event: int) -> None:
        self.lib.cuEventDestroy_v2(ctypes.c_void_p(event))


call1 = i64_call(1)
call2 = i64_call(2)
call4 = i64_call(4)


@intrinsic
def launch_kernel(typingctx, addr, func, grid, block, shared, stream, params):
    """cuLaunchKernel(func, grid (x, y, z), block (x, y, z), shared bytes, stream (0: the default), params:
    the address of an array of pointers to the kernel's arguments, no `extra`) through its address `addr`."""
    sig = types.int32(addr, func, grid, block, shared, stream, params)

    def codegen(context, builder, signature, llargs):
        i64, i32 = ir.IntType(64), ir.IntType(32)
        fnty = ir.FunctionType(i32, [i64] + [i32] * 7 + [i64, i64, i64])
        a = [context.cast(builder, llargs[k], signature.args[k], types.int64) for k in (0, 1, 4, 5, 6)]
        fn = builder.inttoptr(a[0], fnty.as_pointer())
        dims = []
        for k, tup in ((2, llargs[2]), (3, llargs[3])):
            for i in range(3):
                v = context.cast(builder, builder.extract_value(tup, i), signature.args[k][i], types.int64)
                dims.append(builder.trunc(v, i32))
        zero = ir.Constant(i64, 0)
        return builder.call(fn, [a[1]] + dims + [builder.trunc(a[2], i32), a[3], a[4], zero])
    return sig, codegen
