"""CudaBackend.batch_launch's packing, checked without a GPU: every kernel argument is decoded from the
one uploaded blob and compared with what the per-call methods would have uploaded."""
import contextlib

import numpy as np

from mbgpu.cuda.backend import CudaBackend
from mbgpu.cuda.batch import root_job_arrays, scale_job_arrays
from mbgpu.likelihood.protocol import InstanceSpec
from mbgpu.models import ModelSpec, build_model


class K:
    """A kernel stand-in that records its arguments."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    arg_format = ""

    def _launch_kernel(self, grid, block, args, shared, stream):
        self.log.append((self.name, args))


def launcher(fn):
    """A kernel stand-in whose launches call fn(grid, block, stream, *args)."""
    import types

    return types.SimpleNamespace(arg_format="", _launch_kernel=lambda grid, block, args, shared, stream:
                                 fn(grid, block, stream, *args))


class Fake:
    """The attributes CudaBackend's launch methods read; launch_packed and its helpers are the real ones
    (arguments are 'packed' as the tuple itself)."""

    _compat_ready = False
    launch_packed = CudaBackend.launch_packed
    _stage = CudaBackend._stage
    _compat_pointer = CudaBackend._compat_pointer
    _launch_matrices = CudaBackend._launch_matrices
    _launch = CudaBackend._launch

    @staticmethod
    def _pack(fmt, *args):
        return args


def test_batch_launch_packs_every_section():
    BASE = 1 << 20
    f = Fake()
    f.spec = InstanceSpec(5, 16, 100, 4, 4, 40, 20)
    f.n_sm = 132; f.mat_shared = 0
    log = []
    f.k_matrices, f.k_scale, f.k_root = K(log, "mat"), K(log, "scale"), K(log, "root")
    f.launch_level = lambda d_ops, start, n: log.append(("level", (d_ops, start, n)))
    f.dev = contextlib.nullcontext()
    f._sync_tips = lambda: None
    f._invariant_site_table = lambda: 777
    f.staging = None                          # asynchronous=False (the default): synchronous copies
    store = {}
    def upload(name, arr):
        store["blob"] = arr.copy()
        return BASE

    f._upload = upload
    f._work = lambda name, n: ("buf", name, n)
    f.d_matrices, f.d_scale, f.d_partials, f.d_tip_states, f.d_tip_index, f.d_weights = "M", "S", "P", "TS", "TI", "W"
    f._tip_partials_ptr = lambda: "TP"
    m = build_model(ModelSpec(datatype="dna", nst=6, rates="invgamma", alpha=0.5, pinvar=0.2))
    rng = np.random.default_rng(0)
    groups = [(m.eigen, m.category_rates, np.array([3, 7]), np.array([0.1, 0.2])), (m.eigen, m.category_rates * 2, np.array([9]), np.array([0.3]))]
    ops = rng.integers(0, 50, (6, 7)); counts = [4, 2]
    sj = [(18, True, np.array([1, 2, 3]), 1), (19, True, np.array([4, 5]), 1)]
    calls = [(7, m.frequencies, m.category_weights, m.pinvar, 18, 3, 11), (8, m.frequencies, m.category_weights, m.pinvar, 19, 2, 12)]
    h = CudaBackend.batch_launch(f, groups, ops, counts, sj, calls, "x")
    blob = store["blob"]
    def ints(addr, n):
        return blob[(addr - BASE) // 8:(addr - BASE) // 8 + n]

    def reals(addr, n):
        return ints(addr, n).view(np.float64)

    name, a = log[0]; assert name == "mat"
    n, idx, lens, eig_of, eig, rates, dm = a
    assert n == 3 and list(ints(idx, 3)) == [3, 7, 9] and list(reals(lens, 3)) == [0.1, 0.2, 0.3] and list(ints(eig_of, 3)) == [0, 0, 1]
    E = np.concatenate([m.eigen.values.ravel(), m.eigen.vectors.ravel(), m.eigen.inverse.ravel()])
    assert np.array_equal(reals(eig, 2 * E.size), np.concatenate([E, E]))
    assert np.array_equal(reals(rates, 8), np.concatenate([m.category_rates, m.category_rates * 2]))
    assert log[1][0] == "level" and log[1][1][1:] == (0, 4) and log[2][1][1:] == (4, 2)
    assert np.array_equal(ints(log[1][1][0], 42).reshape(6, 7), ops)
    name, (d_scale, p, table, flat) = log[3]
    t, fl = scale_job_arrays(sj)
    assert np.array_equal(ints(table, t.size).reshape(t.shape), t) and np.array_equal(ints(flat, fl.size), fl)
    name, a = log[4]
    jobs, params = root_job_arrays(calls, 4, 4)
    assert np.array_equal(ints(a[0], jobs.size).reshape(jobs.shape), jobs)
    assert np.array_equal(reals(a[1], params.size).reshape(params.shape), params)
    assert a[2] == 100 and a[3] == 5 and a[10] == 777 and a[12] == 0 and a[13] == ("buf", "root_sumsx", 16 * 1 * 2)
    assert a[14:] == (0, 0)                              # a flush not from the core: scale sums launched apart
    assert h[1:] == (2, 1)


class FakeDriver:
    """pycuda.driver stand-in whose asynchronous copies and launches run only at a synchronisation point,
    as on a device: a staging buffer overwritten before its copy ran would upload the wrong bytes."""

    class event_flags:
        DISABLE_TIMING = 2

    def __init__(self):
        self.pending, self.mem, self.next = [], {}, 1 << 20

    def run(self):
        ops, self.pending = self.pending, []
        for op in ops:
            op()

    def alloc(self, n):
        addr, self.next = self.next, self.next + (1 << 20)
        self.mem[addr] = bytearray(max(n, 16))
        return addr

    def pagelocked_empty(self, n, dtype):
        return np.zeros(n, dtype=dtype)

    def memcpy_htod_async(self, dst, src, stream=None):
        self.pending.append(lambda: self.mem.__setitem__(dst, bytearray(np.asarray(src).tobytes())))

    def memcpy_dtoh_async(self, dst, src, stream=None):
        self.pending.append(lambda: dst.__setitem__(slice(None), np.frombuffer(bytes(self.mem[src][:dst.nbytes]), np.uint8)))

    def Event(self, flags=0):
        driver = self

        class Ev:
            def record(self, stream=None):
                return self

            def synchronize(self):
                driver.run()
        return Ev()

    class Context:
        @staticmethod
        def synchronize():
            pass


def test_async_flushes_keep_their_staging_until_their_event(monkeypatch):
    """Two flushes in flight (tags 0 and 1): each uploads its own blob and reads back its own sums,
    whatever runs later; a third flush with tag 0 waits for the first before reusing its buffers."""
    import sys
    import types

    from mbgpu.cuda.async_io import HostStaging

    drv = FakeDriver()
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=drv))
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    f = Fake()
    f.spec = InstanceSpec(5, 16, 100, 4, 4, 40, 20)
    f.n_sm = 132; f.mat_shared = 0
    f.dev = contextlib.nullcontext()
    f._sync_tips = lambda: None
    f._invariant_site_table = lambda: 0
    f.staging = HostStaging()
    work = {}
    f._work = lambda name, n: work.setdefault(name, drv.alloc(n))
    f.launch_level = lambda d_ops, start, n: None
    f.k_matrices = f.k_scale = launcher(lambda *a: None)
    uploads = []

    def root_kernel(grid, block, stream, *args, **kw):
        d_sums, n_calls = args[13], grid[1]
        value = 100.0 * (len(uploads) + 1)
        uploads.append(args[0])               # the blob's root-job section: read when the kernel runs

        def write():
            sums = np.zeros((n_calls, 1, 2))
            sums[:, 0, 0] = value + np.arange(n_calls)
            drv.mem[d_sums][:sums.nbytes] = sums.tobytes()
        drv.pending.append(write)

    f.k_root = launcher(root_kernel)
    f.d_matrices, f.d_scale, f.d_partials, f.d_tip_states, f.d_tip_index, f.d_weights = 1, 2, 3, 4, 5, 6
    f._tip_partials_ptr = lambda: 7
    m = build_model(ModelSpec(datatype="dna"))

    def flush(tag, root, n_calls):
        calls = [(root + j, m.frequencies, np.full(4, 0.25), 0.0, 18, 3, 11) for j in range(n_calls)]
        return CudaBackend.batch_launch(f, [], np.zeros((0, 7), np.int64), [], [(18, True, [1, 2], 1)] * n_calls,
                                        calls, tag)

    h0, h1 = flush("0", 40, 2), flush("1", 50, 3)
    assert not drv.mem[work["batch0"]].strip(b"\0")          # nothing has run yet: copies are queued
    assert CudaBackend.batch_fetch(f, h1) == [200.0, 201.0, 202.0]
    assert CudaBackend.batch_fetch(f, h0) == [100.0, 101.0]
    blob0 = np.frombuffer(bytes(drv.mem[work["batch0"]]), np.int64)
    assert 40 in blob0.tolist() and 41 in blob0.tolist() and 50 not in blob0.tolist()
    h2 = flush("0", 60, 1)
    assert CudaBackend.batch_fetch(f, h2) == [300.0]
    assert 60 in np.frombuffer(bytes(drv.mem[work["batch0"]]), np.int64).tolist()


def test_parsimony_async_reads_the_costs_its_own_launch_wrote(monkeypatch):
    import sys
    import types

    from mbgpu.cuda.async_io import HostStaging
    from mbgpu.cuda.parsimony import GpuParsimony

    drv = FakeDriver()

    class Stream:
        def __init__(self, flags=0):
            assert flags == 1                           # CU_STREAM_NON_BLOCKING

        def synchronize(self):
            drv.run()

    drv.Stream = Stream
    drv.memset_d8_async = lambda dest, value, n, stream=None: drv.pending.append(
        lambda: drv.mem[dest].__setitem__(slice(0, n), bytes([value]) * n))
    monkeypatch.setitem(sys.modules, "pycuda", types.SimpleNamespace(driver=drv))
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    ps = types.SimpleNamespace(inputs=drv.alloc(64), cost=drv.alloc(64))

    def kernel(grid, block, stream, *args):             # cost[j] += (j + 1) * sum of the uploaded words
        def run():
            total = int(np.frombuffer(bytes(drv.mem[ps.inputs][:12]), np.uint32).sum())
            cost = np.frombuffer(bytes(drv.mem[ps.cost][:16]), np.uint64) + np.array([1, 2], np.uint64) * total
            drv.mem[ps.cost][:16] = cost.tobytes()
        drv.pending.append(run)

    drv.mem[ps.cost][:16] = np.array([7, 7], np.uint64).tobytes()      # stale costs: the memset must clear them
    gpu = GpuParsimony.__new__(GpuParsimony)
    gpu.staging, gpu._stream = HostStaging(), None
    fn = types.SimpleNamespace(prepared_async_call=kernel)
    out = gpu._run_async(fn, (1, 1), (), ps, np.array([1, 2, 3], np.uint32), 2)
    assert out.tolist() == [6, 12] and not drv.pending


def test_asynchronous_flushes_are_an_argument_off_by_default(monkeypatch):
    """backend_factory(asynchronous=...) reaches every CudaBackend it makes (staging buffers or none) and
    the run's GpuParsimony (mbgpu.sampler.setup); the default is synchronous copies."""
    import inspect

    import mbgpu.cuda.context as context
    from mbgpu.cuda.backend import CudaBackend, backend_factory
    from mbgpu.cuda.parsimony import GpuParsimony
    from mbgpu.sampler.setup import _gpu_parsimony

    assert inspect.signature(CudaBackend).parameters["asynchronous"].default is False
    monkeypatch.setattr(context, "open_device", lambda index: ("device", index))
    made = []
    monkeypatch.setattr(CudaBackend, "__init__", lambda self, spec, **kw: made.append(kw))
    for asynchronous in (False, True):
        make = backend_factory(device=2, asynchronous=asynchronous)
        make("spec")
        assert made[-1] == {"device": ("device", 2), "precision": "double", "asynchronous": asynchronous}
        pars = _gpu_parsimony(make)
        assert isinstance(pars, GpuParsimony) and (pars.staging is not None) == asynchronous
    assert backend_factory(device=0).asynchronous is False


def test_a_flush_in_jobs_goes_out_in_one_partials_launch(tmp_path):
    """The core's flush (ops job by job, spans section): one update_partials_jobs launch with the ops and
    the spans as written, no launch per level, then the scale and root launches."""
    from mbgpu.core import trees as T
    from mbgpu.core.device_division import DeviceDivision
    from mbgpu.cuda.batch import unpack_flush
    from tests.test_core.build import PRIMATES_GTR, build_chains
    from tests.test_core.packed_host import packed_choice

    chains, _p, _s = build_chains(tmp_path, PRIMATES_GTR, nchains=3, wrap=packed_choice)
    trees = T.ChainTrees([ch.tree for ch in chains])
    div = DeviceDivision(chains[0].parts[0].inc.shared, [ch.parts[0].inc for ch in chains])
    div.refresh(trees)
    div.todo[:] = [2, 0, 2]
    flush = div.plan(trees)
    BASE = 1 << 20
    f = Fake()
    f.spec = div.backend.spec
    f.n_sm = 132; f.mat_shared = 0
    log, store = [], {}
    f.k_matrices, f.k_scale, f.k_root = K(log, "mat"), K(log, "scale"), K(log, "root")
    f.launch_level = lambda d_ops, start, n: log.append(("level", (d_ops, start, n)))
    f.launch_jobs = lambda d_ops, d_spans, n: log.append(("jobs", (d_ops, d_spans, n)))
    f.dev = contextlib.nullcontext()
    f._sync_tips = lambda: None
    f._invariant_site_table = lambda: 777
    f.staging = None
    f._upload = lambda name, arr: store.setdefault("blob", arr.copy()) is not None and BASE
    f._work = lambda name, n: ("buf", name, n)
    f.d_matrices, f.d_scale, f.d_partials, f.d_tip_states, f.d_tip_index, f.d_weights = "M", "S", "P", "TS", "TI", "W"
    f._tip_partials_ptr = lambda: "TP"
    CudaBackend.launch_packed(f, flush)
    assert flush.paired and [name for name, _a in log] == ["mat", "jobs", "root"]   # the root sums the scales
    root_args = log[2][1]
    assert root_args[-2] == BASE + 8 * sum(flush.sizes[:3]) and root_args[-1] == BASE + 8 * sum(flush.sizes[:4])
    got = unpack_flush(flush, f.spec.n_states, f.spec.n_categories)
    blob = store["blob"]
    d_ops, d_spans, n_jobs = log[1][1]
    assert n_jobs == 2
    ops = blob[(d_ops - BASE) // 8:(d_ops - BASE) // 8 + got["ops"].size].reshape(-1, 7)
    spans = blob[(d_spans - BASE) // 8:(d_spans - BASE) // 8 + 6].reshape(2, 3)
    assert np.array_equal(ops, got["ops"]) and np.array_equal(spans, got["spans"])
    assert spans[1, 0] == spans[0, 1] and spans.sum(axis=0)[1] == len(ops)
    assert (spans[:, 2] >= spans[:, 1]).all() and (spans[:, 2] <= 3 * spans[:, 1]).all()   # weights
