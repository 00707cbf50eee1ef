"""The compiled flush path (mbgpu.cuda.driver_calls, mbgpu.cuda.core_flush). Without a GPU: the intrinsics
call C functions by address with the arguments in the C ABI's places (ctypes callbacks stand in for the
driver's entry points), and the compiled collect gives CudaBackend.compensated_totals' bits, non-finite
sums included. On a GPU: a chain's flushes give the same log likelihoods, bit for bit, as pycuda's path
(launch_packed and batch_fetch) for the same proposals."""
import ctypes

import numba
import numpy as np
import pytest

from mbgpu.cuda.backend import compensated_totals
from mbgpu.cuda.core_flush import collect_sums
from mbgpu.cuda.driver_calls import DTOH, ENTRY_POINTS, HTOD, LAUNCH, RECORD, SYNC, call1, call2, call4, launch_kernel

I64 = ctypes.c_int64


@numba.njit
def _calls(table, a, b, c, d):
    return call1(table[0], (a,)), call2(table[1], (a, b)), call4(table[2], (a, b, c, d))


@numba.njit
def _launch(addr, func, gx, gy, shared, stream, params):
    return launch_kernel(addr, func, (gx, gy, 1), (128, 4, 1), shared, stream, params)


def test_calls_by_address_pass_int64_arguments_and_return_the_int_result():
    seen = []
    f1 = ctypes.CFUNCTYPE(ctypes.c_int, I64)(lambda a: seen.append((a,)) or 11)
    f2 = ctypes.CFUNCTYPE(ctypes.c_int, I64, I64)(lambda a, b: seen.append((a, b)) or 22)
    f4 = ctypes.CFUNCTYPE(ctypes.c_int, I64, I64, I64, I64)(lambda *a: seen.append(a) or -3)
    table = np.array([ctypes.cast(f, ctypes.c_void_p).value for f in (f1, f2, f4)], dtype=np.int64)
    big = 2**40 + 5
    assert _calls(table, big, -7, 0, 3) == (11, 22, -3)
    assert seen == [(big,), (big, -7), (big, -7, 0, 3)]


def test_launch_kernel_puts_dims_shared_bytes_and_params_where_cuLaunchKernel_reads_them():
    seen = []
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p)

    def fake(func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        first = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))[0]
        seen.append((func, gx, gy, gz, bx, by, bz, shared, stream, ctypes.c_int64.from_address(first).value, extra))
        return 0

    cb = proto(fake)
    vals = np.array([123456789012], dtype=np.int64)
    argp = np.array([vals.ctypes.data], dtype=np.int64)
    assert _launch(ctypes.cast(cb, ctypes.c_void_p).value, 0xABC, 70000, 9, 49152 + 8, 0, argp.ctypes.data) == 0
    assert _launch(ctypes.cast(cb, ctypes.c_void_p).value, 0xABC, 1, 2, 0, 0x5EED, argp.ctypes.data) == 0
    assert seen == [(0xABC, 70000, 9, 1, 128, 4, 1, 49160, None, 123456789012, None),
                    (0xABC, 1, 2, 1, 128, 4, 1, 0, 0x5EED, 123456789012, None)]


def _sync_table():
    keep = ctypes.CFUNCTYPE(ctypes.c_int, I64)(lambda ev: 0)
    table = np.zeros(len(ENTRY_POINTS), dtype=np.int64)
    table[SYNC] = ctypes.cast(keep, ctypes.c_void_p).value
    return table, keep


@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan])
def test_compiled_collect_gives_compensated_totals_bits(bad):
    rng = np.random.default_rng(3)
    n_roots, gx = 5, 37
    sums = np.empty((n_roots, gx, 2))
    sums[:, :, 0] = -rng.random((n_roots, gx)) * 10.0 ** rng.integers(-3, 6, (n_roots, gx))
    sums[:, :, 1] = rng.normal(size=(n_roots, gx)) * 1e-17
    if bad is not None:
        sums[2, 4, 0] = bad
    want = compensated_totals(sums)
    todo = np.array([1, 0, 2, 1, 0, 1, 2, 0], dtype=np.int8)      # 5 chains with work, in order
    lnl_p = np.full(todo.size, 99.0)
    table, keep = _sync_table()
    flat = np.zeros(2 * gx * (n_roots + 2))
    flat[:sums.size] = sums.ravel()
    assert collect_sums(table, 0, flat, n_roots, gx, todo, 0, todo.size, lnl_p) == 0
    got = lnl_p[todo != 0]
    assert (lnl_p[todo == 0] == 99.0).all()
    for g, w in zip(got.tolist(), want):
        assert (np.isnan(g) and np.isnan(w)) or g == w


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["primates-gtr-i-g", "cynmix-partitioned"])
def test_compiled_flushes_give_pycuda_paths_bits(case, shared_data, tmp_path, monkeypatch):
    """The core on the GPU with compiled flushes and with pycuda's (DeviceDivision.compiled_flushes): the
    same trees and the same log likelihoods, bit for bit, at every sample (+I's invariant-site table and
    coding=variable's host share included)."""
    import io

    from mbgpu.console import Console
    from mbgpu.core.device_block import DeviceBlockRunner
    from mbgpu.core.device_division import DeviceDivision
    from mbgpu.cuda.backend import backend_factory
    from mbgpu.interpreter import Interpreter
    from mbgpu.sampler.mc3 import RunOptions
    from tests.test_cuda.test_sampler_gpu import CASES, SETUP, trace_run

    monkeypatch.chdir(tmp_path)
    data, lset, ngen = CASES[case]
    (tmp_path / "s.nex").write_text("#NEXUS\n" + SETUP.format(data=shared_data / data, lset=lset, ngen=ngen))
    interp = Interpreter(Console(io.StringIO()))
    interp.run_file(str(tmp_path / "s.nex"))
    opts = RunOptions.from_settings(interp.settings.mcmc)
    monkeypatch.setattr(DeviceBlockRunner, "enabled", True)        # device blocks on the GPU (the default)
    made, init = [], DeviceDivision.__init__

    def noted(self, *a):
        init(self, *a)
        made.append(self.flushes is not None)

    monkeypatch.setattr(DeviceDivision, "__init__", noted)
    traces = []
    for compiled in (True, False):
        monkeypatch.setattr(DeviceDivision, "compiled_flushes", compiled)
        traces.append(trace_run(interp.settings, backend_factory(precision="double", asynchronous=True), opts))
    assert True in made and False in made
    assert len(traces[0]) == ngen // 10 + 1
    for row_a, row_b in zip(*traces):
        for (pa, ba, la), (pb, bb, lb) in zip(row_a, row_b):
            assert np.array_equal(pa, pb) and np.array_equal(ba, bb) and la == lb


class _FakeDriver:
    """ctypes callbacks for the entry points launch_planned calls, noting each call (device memory: none)."""

    def __init__(self):
        self.log = []
        i64 = [ctypes.c_int64] * 4
        launch = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p,
                                  ctypes.c_void_p, ctypes.c_void_p)
        self.keep = {LAUNCH: launch(self._launch),
                     HTOD: ctypes.CFUNCTYPE(ctypes.c_int, *i64)(lambda *a: self.log.append(("htod",) + a) or 0),
                     DTOH: ctypes.CFUNCTYPE(ctypes.c_int, *i64)(lambda *a: self.log.append(("dtoh",) + a) or 0),
                     RECORD: ctypes.CFUNCTYPE(ctypes.c_int, *i64[:2])(lambda *a: self.log.append(("record",) + a) or 0),
                     SYNC: ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64)(lambda ev: 0)}
        self.table = np.array([ctypes.cast(self.keep[i], ctypes.c_void_p).value for i in range(len(ENTRY_POINTS))],
                              dtype=np.int64)

    def _launch(self, func, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        ptr = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        n = ARITY[func]
        self.log.append(("launch", func, (gx, gy), (bx, by, bz), shared,
                         tuple(ctypes.c_int64.from_address(ptr[i]).value for i in range(n))))
        return 0


ARITY = {1: 7, 2: 11, 3: 16}       # transition_matrices, update_partials_jobs, root_lnl: their arguments


def _flush(rng, n_jobs=3, s=4, k=4, n_tips=9):
    """A random paired core flush (PackedFlush layout) of n_jobs chains, its blob and section sizes."""
    from mbgpu.cuda.batch import SPAN_WIDTH, PackedFlush

    n_mat, n_ops, n_eig, inner = 5, 4 * n_jobs, 2, n_tips - 2
    sizes = [n_mat, n_mat, 7 * n_ops, 5 * n_jobs, inner * n_jobs, 4 * n_jobs, SPAN_WIDTH * n_jobs]
    params_at = n_mat + n_eig * (s + 2 * s * s + k)
    total = sum(sizes) + params_at + n_jobs * (s + k + 2)
    blob = np.zeros(total + 40, dtype=np.int64)
    blob[:sum(sizes)] = rng.integers(0, 50, sum(sizes))
    reals = blob[sum(sizes):total].view(np.float64)
    reals[:] = rng.random(reals.size)
    params = reals[params_at:].reshape(n_jobs, s + k + 2)
    return blob, np.array(sizes, dtype=np.int64), total, params_at, n_eig, params, \
        PackedFlush(blob[:total], sizes, n_mat, params, params_at, n_eig, [], paired=True)


@pytest.mark.parametrize("pinvar", [0.0, 0.3])
def test_launch_planned_makes_launch_packeds_launches(pinvar, monkeypatch):
    """The compiled launch queues what CudaBackend.launch_packed queues (its own code, with pycuda's
    calls noted instead of made): the same kernels, grids, blocks, shared bytes and arguments."""
    import contextlib
    from types import SimpleNamespace

    from mbgpu.cuda.backend import CudaBackend
    from mbgpu.cuda.core_flush import CoreFlushes, launch_planned

    rng = np.random.default_rng(11)
    blob, sizes, total, params_at, n_eig, params, flush = _flush(rng)
    params[:, -2] = pinvar
    d_blob, d_sums, event = 1 << 32, 3 << 32, 99
    b = object.__new__(CudaBackend)
    spec = SimpleNamespace(n_patterns=50001, n_tips=9, n_states=4, n_categories=4)
    b.__dict__.update(spec=spec, dev=contextlib.nullcontext(), _tips_dirty=False, _compat_ready=pinvar > 0,
                      d_compat=7 << 20, staging=None, n_sm=132, jobs_waves=1, jobs_resident=3, block=(32, 4, 1),
                      jobs_shared=61440, mat_shared=640, pattern_block=32, d_partials=1 << 20, d_tip_partials=None,
                      d_tip_states=2 << 20, d_tip_index=3 << 20, d_matrices=4 << 20, d_scale=5 << 20,
                      d_weights=6 << 20, k_matrices=1, k_jobs=2, k_root=3)
    want = []
    monkeypatch.setattr(CudaBackend, "_launch", lambda self, func, grid, block, shared, *args, stream=None:
                        want.append(("launch", func, tuple(grid), tuple(block), shared, tuple(int(a) for a in args))))
    monkeypatch.setattr(CudaBackend, "_upload", lambda self, name, array: d_blob)
    monkeypatch.setattr(CudaBackend, "_work", lambda self, name, nbytes: d_sums)
    monkeypatch.setattr(CudaBackend, "_sync_tips", lambda self: None)
    b.launch_packed(flush)
    fake = _FakeDriver()
    flushes = object.__new__(CoreFlushes)
    flushes.backend = b
    flushes.refresh = CoreFlushes.refresh.__get__(flushes)
    flushes.ptrs = np.zeros(8, dtype=np.int64)
    flushes.refresh()
    geo = np.array([132, 1, 3, -(-50001 // 32), 32, 4, 61440, 640, 50001, 9, 4, 4, 256], dtype=np.int64)
    vals = np.zeros(16, dtype=np.int64)
    argp = vals.ctypes.data + 8 * np.arange(16, dtype=np.int64)
    sums = np.zeros(2 * 1024 * 3)
    got = launch_planned(sizes, total, n_eig, params_at, blob, d_blob, d_sums, sums, event, fake.table,
                         np.array([1, 2, 3], dtype=np.int64), geo, flushes.ptrs, vals, argp, 0x77)
    if pinvar > 0:                               # copies and event on the stream passed (launches: their log)
        assert got[0] == 0 and fake.log[0] == ("htod", d_blob, blob.ctypes.data, 8 * total, 0x77)
        assert fake.log[1:-2] == want
        gx = -(-50001 // 256)
        assert fake.log[-2:] == [("dtoh", sums.ctypes.data, d_sums, 16 * gx * 3, 0x77), ("record", event, 0x77)]
    else:                    # no +I in these calls: no table (launch_packed passes 0 as well)
        assert got[0] == 0 and fake.log[1:-2] == want
