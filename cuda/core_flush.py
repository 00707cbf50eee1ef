"""The compiled core's flushes on one CUDA backend, queued and collected by compiled code: DeviceDivision
plans a flush straight into a page-locked buffer of its tag, and `launch_planned` copies it up, queues
the matrices, jobs and root kernels and the root sums' copy back and records the tag's event, all through
the driver's entry points (mbgpu.cuda.driver_calls); `collect_sums` waits for the event and adds the sums.

The kernels, their arguments and grids, and the sums' totals (math.fsum's bits; the plain sum of a call
whose pairs are not all finite) are those of CudaBackend.launch_packed and batch_fetch, so the chains'
log likelihoods keep their bits; what goes is ~70 us of Python per flush (docs/performance.md, issue 23).
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.exact_sum import _fsum
from mbgpu.jit import JIT_OPTIONS

from .backend import ROOT_BLOCK
from .batch import ROOT_JOB_WIDTH, SCALE_JOB_WIDTH, SPAN_WIDTH
from .driver_calls import CLOCK, CLOCK_MONOTONIC, DTOH, HTOD, LAUNCH, RECORD, SYNC, Driver, call1, call2, call4, \
    launch_kernel

NEED_COMPAT = -1          # launch_planned: a root call has pinvar > 0 and the invariant-site table is not built
# geometry (int64 array `geo`): the backend's launch shapes
N_SM, WAVES, RESIDENT, N_TILES, JOBS_BX, JOBS_BY, JOBS_SHARED, MAT_SHARED, N_PATTERNS, N_TIPS, N_STATES, \
    N_CATS, ROOT_BLOCK_SIZE = range(13)
# device pointers (int64 array `ptrs`), refreshed when the tips or the invariant-site table change
PARTIALS, TIP_PARTIALS, TIP_STATES, TIP_INDEX, MATRICES, SCALE, COMPAT, WEIGHTS = range(8)
MAT_KERNEL, JOBS_KERNEL, ROOT_KERNEL = range(3)


class CoreFlushes:
    """A backend's compiled flush path: kernels loaded a second time as raw driver handles, launch shapes,
    device pointers, and per tag (flushes in flight together) a page-locked blob and sums buffer, their
    device twins and an event."""

    # On: a compiled block's two groups queue on two streams of their own, so the device may run one group's
    # flush beside the other's (the chains' buffers are disjoint). Off (the default): both on the default
    # stream, one after the other: two streams were not faster on one H200 (2026-11-29, docs/performance.md).
    # A class setting for benchmarks (mpi_scaling.py --streams two).
    block_streams = False

    def __init__(self, backend, capacity: int, max_roots: int, driver=None):
        """`driver`: the driver's calls (driver_calls.Driver; tests pass one that runs flushes on the host)."""
        b, spec = backend, backend.spec
        self.backend, self.capacity, self.max_roots = b, int(capacity), int(max_roots)
        self.gx_max = min(-(-spec.n_patterns // ROOT_BLOCK), 1024)
        self.driver = Driver() if driver is None else driver
        self.table = self.driver.table
        with b.dev:
            self.kernels = core_kernels(self.driver, b)
        n_tiles = -(-spec.n_patterns // b.pattern_block)
        self.geo = np.array([b.n_sm, b.jobs_waves, b.jobs_resident, n_tiles, b.block[0], b.block[1], b.jobs_shared,
                             b.mat_shared, spec.n_patterns, spec.n_tips, spec.n_states, spec.n_categories, ROOT_BLOCK],
                            dtype=np.int64)
        self.ptrs = np.zeros(8, dtype=np.int64)
        self.vals = np.zeros(16, dtype=np.int64)                    # one kernel's arguments, 8 bytes each
        self.argp = self.vals.ctypes.data + 8 * np.arange(16, dtype=np.int64)   # cuLaunchKernel's void**
        self.slots: dict[str, tuple] = {}
        self._block, self._state = None, None
        self.refresh()

    def refresh(self) -> None:
        """The device pointers the kernels read (after the tips were uploaded or the table was built)."""
        b = self.backend
        self.ptrs[:] = [int(b.d_partials), b._tip_partials_ptr(), int(b.d_tip_states), int(b.d_tip_index),
                        int(b.d_matrices), int(b.d_scale), int(b.d_compat) if b._compat_ready else 0,
                        int(b.d_weights)]

    def blob(self, tag: str) -> tuple:
        """Tag's page-locked blob as (int64, float64) views, to plan a flush into; the tag's buffers and
        event are made on first use. The tag's previous flush must have been collected."""
        got = self.slots.get(tag)
        if got is None:
            b = self.backend
            with b.dev:
                blob = b.page_locked(self.capacity, np.int64)
                sums = b.page_locked(2 * self.gx_max * self.max_roots, np.float64)
                got = self.slots[tag] = (blob, blob.view(np.float64), sums,
                                         int(b._work("core_batch" + tag, 8 * self.capacity)),
                                         int(b._work("core_sums" + tag, sums.nbytes)), self.driver.event())
        return got[0], got[1]

    def block_args(self, lnl_p: np.ndarray) -> tuple:
        """What a compiled block of generations (mbgpu.core.device_block) queues and collects with: two
        groups' page-locked blobs (int64 and float64 views) and sums, their device twins, events and streams,
        the driver table, kernels, shapes, pointers, argument slots, lnl_p, and per group its (root calls,
        root blocks) in flight, then the nanoseconds and the times it waited for the device (`waited`).
        Made once (inside the context); the per-generation tags keep their own."""
        if self._block is None:
            b, n_sums = self.backend, 2 * self.gx_max * self.max_roots
            with b.dev:
                blobs = b.page_locked(2 * self.capacity, np.int64).reshape(2, self.capacity)
                sums = b.page_locked(2 * n_sums, np.float64).reshape(2, n_sums)
                d_blob = np.array([int(b._work("core_block%d" % g, 8 * self.capacity)) for g in (0, 1)], dtype=np.int64)
                d_sums = np.array([int(b._work("core_block_sums%d" % g, 8 * n_sums)) for g in (0, 1)], dtype=np.int64)
                events = np.array([self.driver.event(), self.driver.event()], dtype=np.int64)
                streams = np.array([self.driver.stream(), self.driver.stream()] if self.block_streams else [0, 0],
                                   dtype=np.int64)
            self._block = (blobs, blobs.view(np.float64), sums, d_blob, d_sums, events, streams)
            self._state = np.zeros((2, 4), dtype=np.int64)
        return self._block + (self.table, self.kernels, self.geo, self.ptrs, self.vals, self.argp, lnl_p,
                              self._state)

    def waited(self) -> tuple[float, int]:
        """Seconds the compiled blocks waited for this backend's flushes, and how many waits (benchmarks
        read it: a block that waits long is bound by the device, one that does not by its host)."""
        if self._block is None:
            return 0.0, 0
        return float(self._state[:, 2].sum()) * 1e-9, int(self._state[:, 3].sum())

    def ready_for_block(self) -> None:
        """Before a compiled block (which cannot call back into Python): the tips uploaded, the invariant-site
        table built (a block may move a chain's pinvar from 0), the pointers refreshed."""
        b = self.backend
        with b.dev:
            if b._tips_dirty:
                b._sync_tips()
            if not b._compat_ready:
                b._invariant_site_table()
            self.refresh()

    def launch(self, tag: str, sizes: np.ndarray, total: int, n_eig: int, params_at: int) -> tuple:
        """Queue the flush planned into tag's blob; (n_roots, gx) for collect."""
        b = self.backend
        blob, reals, sums, d_blob, d_sums, event = self.slots[tag]
        with b.dev:
            if b._tips_dirty:
                b._sync_tips()
                self.refresh()
            args = (sizes, total, n_eig, params_at, blob, d_blob, d_sums, sums, event, self.table, self.kernels,
                    self.geo, self.ptrs, self.vals, self.argp, 0)
            status, n_roots, gx = launch_planned(*args)
            if status == NEED_COMPAT:
                b._invariant_site_table()
                self.refresh()
                status, n_roots, gx = launch_planned(*args)
        _raise_for(status, "queueing a flush")
        return n_roots, gx

    def collect(self, tag: str, n_roots: int, gx: int, todo: np.ndarray, c0: int, c1: int, lnl_p: np.ndarray) -> None:
        """Wait for tag's flush; the log likelihoods of chains c0..c1-1 with todo != 0 into lnl_p, in order."""
        blob, reals, sums, d_blob, d_sums, event = self.slots[tag]
        with self.backend.dev:
            status = collect_sums(self.table, event, sums, n_roots, gx, todo, c0, c1, lnl_p)
        _raise_for(status, "waiting for a flush")


def core_kernels(driver, backend) -> np.ndarray:
    """The matrices, jobs and root kernels of `backend` as raw handles (int64[3]): the cubins of its own
    modules (CudaBackend.core_cubins) loaded again through `driver`, inside the backend's context."""
    b = backend
    jobs, root, matrices = b.core_cubins()
    return np.array([driver.function(matrices, "transition_matrices"),
                     driver.function(jobs, "update_partials_jobs", b.jobs_shared),
                     driver.function(root, "root_lnl", b.mat_shared)], dtype=np.int64)


def _raise_for(status: int, what: str) -> None:
    if status != 0:
        from mbgpu.errors import DeviceError

        raise DeviceError("CUDA driver error %d %s (compiled core flush)" % (status, what))


@numba.njit(**JIT_OPTIONS)
def _kernel(table, func, grid, block, shared, argp, stream):
    """Launch func on `stream` with its arguments in the 8-byte slots that argp points to."""
    return launch_kernel(table[LAUNCH], func, grid, block, shared, stream, argp.ctypes.data)


@numba.njit(**JIT_OPTIONS)
def clock_ns(table):
    """CLOCK_MONOTONIC in nanoseconds, through the table's clock_gettime (driver_calls.CLOCK)."""
    ts = np.empty(2, dtype=np.int64)
    call2(table[CLOCK], (CLOCK_MONOTONIC, ts.ctypes.data))
    return ts[0] * 1000000000 + ts[1]


@numba.njit(**JIT_OPTIONS)
def launch_planned(sizes, total, n_eig, params_at, blob, d_blob, d_sums, sums, event, table, kernels, geo, ptrs, vals,
                   argp, stream):
    """CudaBackend.launch_packed of the flush planned into `blob` (sizes: its int sections' lengths), from
    compiled code, on `stream`: the copy up, the matrices, jobs and root launches, the sums' copy back, the
    event.
    Returns (status, root calls, root blocks): status 0, NEED_COMPAT (nothing queued), or a CUresult."""
    n_mat, n_int = sizes[0], 0
    at = np.empty(7, dtype=np.int64)
    for i in range(7):
        at[i] = d_blob + 8 * n_int
        n_int += sizes[i]
    real0 = d_blob + 8 * n_int
    s, k, p = geo[N_STATES], geo[N_CATS], geo[N_PATTERNS]
    n_roots = sizes[5] // ROOT_JOB_WIDTH
    if sizes[3] // SCALE_JOB_WIDTH != n_roots:        # a core flush is paired: the root kernel sums the scales
        return 1, 0, 0
    compat = ptrs[COMPAT]
    if compat == 0:
        reals = blob[n_int:total].view(np.float64)
        for j in range(n_roots):
            if reals[params_at + j * (s + k + 2) + s + k] > 0.0:
                return NEED_COMPAT, 0, 0
    got = call4(table[HTOD], (d_blob, blob.ctypes.data, 8 * total, stream))
    if got != 0:
        return got, 0, 0
    if n_mat:
        vals[0], vals[1], vals[2], vals[3], vals[4] = n_mat, at[0], real0, at[1], real0 + 8 * n_mat
        vals[5], vals[6] = real0 + 8 * (n_mat + n_eig * (s + 2 * s * s)), ptrs[MATRICES]
        grid = (min(-(-(n_mat * k * s * s) // 256), 8 * geo[N_SM] * 8), 1, 1)
        got = _kernel(table, kernels[MAT_KERNEL], grid, (256, 1, 1), 0, argp, stream)
        if got != 0:
            return got, 0, 0
    if sizes[6]:
        n_jobs = sizes[6] // SPAN_WIDTH
        vals[0], vals[1], vals[2], vals[3], vals[4] = at[2], at[6], n_jobs, p, geo[N_TIPS]
        vals[5], vals[6], vals[7], vals[8] = ptrs[PARTIALS], ptrs[TIP_PARTIALS], ptrs[TIP_STATES], ptrs[TIP_INDEX]
        vals[9], vals[10] = ptrs[MATRICES], ptrs[SCALE]
        grid = (max(n_jobs, min(geo[WAVES] * geo[RESIDENT] * geo[N_SM], n_jobs * geo[N_TILES])), 1, 1)
        got = _kernel(table, kernels[JOBS_KERNEL], grid, (geo[JOBS_BX], geo[JOBS_BY], 1), geo[JOBS_SHARED], argp,
                      stream)
        if got != 0:
            return got, 0, 0
    gx = min(-(-p // geo[ROOT_BLOCK_SIZE]), 1024)
    vals[0], vals[1], vals[2], vals[3] = at[5], real0 + 8 * params_at, p, geo[N_TIPS]
    vals[4], vals[5], vals[6], vals[7] = ptrs[PARTIALS], ptrs[TIP_PARTIALS], ptrs[TIP_STATES], ptrs[TIP_INDEX]
    vals[8], vals[9], vals[10], vals[11] = ptrs[MATRICES], ptrs[SCALE], compat, ptrs[WEIGHTS]
    vals[12], vals[13], vals[14], vals[15] = 0, d_sums, at[3], at[4]
    got = _kernel(table, kernels[ROOT_KERNEL], (gx, n_roots, 1), (geo[ROOT_BLOCK_SIZE], 1, 1), geo[MAT_SHARED], argp,
                  stream)
    if got != 0:
        return got, 0, 0
    got = call4(table[DTOH], (sums.ctypes.data, d_sums, 16 * gx * n_roots, stream))
    if got != 0:
        return got, 0, 0
    return call2(table[RECORD], (event, stream)), n_roots, gx


@numba.njit(**JIT_OPTIONS)
def collect_sums(table, event, sums, n_roots, gx, todo, c0, c1, lnl_p):
    """Wait for the event; each root call's total (CudaBackend.compensated_totals: math.fsum of its
    (sum, compensation) pairs, or numpy's sum of its sums when some are not finite) into lnl_p of the
    chains c0 <= c < c1 with todo != 0, in order. Returns the CUresult."""
    got = call1(table[SYNC], (event,))
    if got != 0:
        return got
    flat = sums[:2 * gx * n_roots].reshape(n_roots, 2 * gx)
    finite = True
    for v in flat.ravel():
        if not np.isfinite(v):
            finite = False
            break
    scratch = np.empty(2 * gx + 1)
    j = 0
    for c in range(c0, c1):
        if todo[c] == 0:
            continue
        lnl_p[c] = _total(flat[j], scratch, finite)
        j += 1
    return 0


@numba.njit(**JIT_OPTIONS)
def _total(row, scratch, all_finite):
    """compensated_totals' total of one call: math.fsum of its pairs when they are finite; else the plain
    sum of its sums (not finite, as numpy's sum there: an inf or NaN among them decides the class)."""
    finite = all_finite
    if not finite:
        finite = True
        for v in row:
            if not np.isfinite(v):
                finite = False
                break
    if finite:
        return _fsum(row, scratch)
    total = 0.0
    for i in range(0, row.shape[0], 2):
        total += row[i]
    return total
