"""CudaBackend.batch_launch's packing, checked without a GPU: every kernel argument is decoded from the
one uploaded blob and compared with what the per-call methods would have uploaded."""
import contextlib

import numpy as np

from engine.cuda.backend import CudaBackend
from engine.cuda.batch import root_job_arrays, scale_job_arrays
from engine.likelihood.protocol import InstanceSpec
from engine.models import ModelSpec, build_model


class K:
    """A kernel stand-in that records its arguments."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def prepared_async_call(self, grid, block, stream, *args, **kw):
        self.log.append((self.name, args))


class Fake:
    pass


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
    assert h[1:] == (2, 1)
