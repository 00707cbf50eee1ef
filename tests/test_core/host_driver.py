"""A test-only CUDA driver on the host for the compiled flush path (mbgpu.cuda.core_flush): "device"
memory is host memory, the copies are memmoves, and the root kernel's launch rebuilds the flush from the
copied blob and the launches' arguments (as the kernels read them) and replays it on a PackedHost, writing
each chain's log likelihood where the root kernel writes its sums. So the compiled queue and collect,
their addresses, sizes and argument slots run, and are checked, without a GPU."""
from __future__ import annotations

import contextlib
import ctypes
import itertools

import numpy as np

from mbgpu.cuda.batch import SPAN_WIDTH, PackedFlush
from mbgpu.cuda.core_flush import CoreFlushes
from mbgpu.cuda.driver_calls import DTOH, ENTRY_POINTS, HTOD, LAUNCH, RECORD, SYNC, clock_address
from tests.test_core.packed_host import PackedHost

MATRICES, JOBS, ROOT = 1, 2, 3          # the kernels' handles here
ARITY = {MATRICES: 7, JOBS: 11, ROOT: 16}


class HostDriver:
    """driver_calls.Driver's part that compiled flushes use, with the device on the host."""

    def __init__(self, host: PackedHost):
        self.host, self.events, self.launches = host, itertools.count(1), []
        self.blob = None                    # (address, bytes) of the last copy up
        i64 = [ctypes.c_int64] * 4
        launch = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p)
        self.keep = {LAUNCH: launch(self._launch), HTOD: ctypes.CFUNCTYPE(ctypes.c_int, *i64)(self._htod),
                     DTOH: ctypes.CFUNCTYPE(ctypes.c_int, *i64)(self._dtoh),
                     RECORD: ctypes.CFUNCTYPE(ctypes.c_int, *i64[:2])(lambda ev, stream: 0),
                     SYNC: ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64)(lambda ev: 0)}
        self.table = np.array([ctypes.cast(self.keep[i], ctypes.c_void_p).value for i in range(len(ENTRY_POINTS))] +
                              [clock_address()], dtype=np.int64)
        self.streams = itertools.count(101)

    def function(self, path: str, name: str, dynamic_shared: int = 0) -> int:
        return {"transition_matrices": MATRICES, "update_partials_jobs": JOBS, "root_lnl": ROOT}[name]

    def event(self) -> int:
        return next(self.events)

    def stream(self) -> int:
        return next(self.streams)

    def _htod(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        self.blob = (dst, nbytes)
        return 0

    def _dtoh(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        return 0

    def _launch(self, func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptr = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        args = [ctypes.c_int64.from_address(ptr[i]).value for i in range(ARITY[func])]
        self.launches.append((func, args))
        if func == ROOT:
            self._replay(gx, gy, args)
            self.launches = []
        return 0

    def _replay(self, gx: int, n_roots: int, root_args: list) -> None:
        """The flush the launches describe, replayed on the PackedHost; lnL j into sums[j, 0, 0]."""
        s, k = self.host.spec.n_states, self.host.spec.n_categories
        base, nbytes = self.blob
        blob = np.frombuffer((ctypes.c_int64 * (nbytes // 8)).from_address(base), dtype=np.int64).copy()
        mats = [a for f, a in self.launches if f == MATRICES]
        (jobs,) = [a for f, a in self.launches if f == JOBS]
        at2, at6, n_jobs = jobs[:3]
        at0, at1 = (mats[0][1], mats[0][3]) if mats else (base, base)
        at = [at0, at1, at2, root_args[14], root_args[15], root_args[0], at6]
        sizes = [(at[i + 1] - at[i]) // 8 for i in range(6)] + [SPAN_WIDTH * n_jobs]
        real0 = at6 + 8 * sizes[6]
        n_mat = sizes[0]
        n_eig = ((mats[0][5] - real0) // 8 - n_mat) // (s + 2 * s * s) if mats else 0
        params_at = (root_args[1] - real0) // 8
        reals = blob[sum(sizes):].view(np.float64)
        params = reals[params_at:params_at + n_roots * (s + k + 2)].reshape(n_roots, s + k + 2)
        flush = PackedFlush(blob, sizes, n_mat, params, params_at, n_eig, [], paired=True)
        sums = np.zeros((n_roots, gx, 2))
        sums[:, 0, 0] = self.host.launch_packed(flush)
        ctypes.memmove(root_args[13], sums.ctypes.data, sums.nbytes)


class CompiledPackedHost(PackedHost):
    """A PackedHost that also offers the compiled flush path (core_flushes), run by a HostDriver."""

    def __init__(self, inner):
        super().__init__(inner)
        self.__dict__.update(dev=contextlib.nullcontext(), n_sm=4, jobs_waves=1, jobs_resident=2, pattern_block=32,
                             block=(32, 4, 1), jobs_shared=0, mat_shared=0, _tips_dirty=False, _compat_ready=False,
                             d_compat=8, d_partials=1, d_tip_states=3, d_tip_index=4, d_matrices=5, d_scale=6,
                             d_weights=7, memory={}, driver=None, flushes_made=0)

    def _tip_partials_ptr(self) -> int:
        return 2

    def _invariant_site_table(self) -> int:
        """Built on demand, as CudaBackend's: until then the flushes see no table (pointer 0)."""
        self._compat_ready = True
        return self.d_compat

    def _work(self, name: str, nbytes: int) -> int:
        buf = self.memory.get(name)
        if buf is None or buf.nbytes < nbytes:
            buf = self.memory[name] = np.zeros(max(int(nbytes), 16), dtype=np.uint8)
        return buf.ctypes.data

    def page_locked(self, n: int, dtype) -> np.ndarray:
        return np.zeros(int(n), dtype=dtype)

    def core_cubins(self) -> tuple:
        return ("jobs", "root", "matrices")

    def core_flushes(self, capacity: int, max_roots: int):
        self.driver = HostDriver(self)
        self.flushes_made += 1
        return CoreFlushes(self, capacity, max_roots, self.driver)


def compiled_packed_choice(choice):
    """A BackendChoice whose instances are CompiledPackedHost wrappers of the chosen host backend."""
    from dataclasses import replace

    return replace(choice, make=lambda spec: CompiledPackedHost(choice.make(spec)))
