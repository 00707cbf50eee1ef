"""GPU SSV kernel vs the numpy reference and the oracle tables (needs CUDA; no pyhmmer needed)."""
import numpy as np
import pytest

from mbgpu.hmm.fasta import pack, read_fasta
from mbgpu.hmm.hmmfile import read_hmms
from mbgpu.hmm.profile import byte_profile
from mbgpu.hmm.reference import ssv_raw
from mbgpu.hmm.scores import finalize_ssv
from mbgpu.hmm.search import format_rows, score_database

from .hmm_util import DB_FILES, MODELS, TABLES, load_table

pytestmark = pytest.mark.gpu


def _same(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])


@pytest.fixture(scope="module")
def dbs(hmm_dir):
    return {k: read_fasta(hmm_dir / v) for k, v in DB_FILES.items()}


@pytest.mark.parametrize("model", MODELS)
def test_gpu_equals_reference(hmm_dir, dbs, model):
    from mbgpu.cuda.context import open_device
    from mbgpu.cuda.ssv import GpuDatabase

    prof = byte_profile(read_hmms(hmm_dir / ("%s.hmm" % model))[0])
    dev = open_device()
    for name, db in dbs.items():
        gdb = GpuDatabase(dev, db)
        try:
            got = gdb.run(prof)
        finally:
            gdb.free()
        ref = ssv_raw(prof, db)
        below = ref < -1 - prof.bias
        np.testing.assert_array_equal(got[below], ref[below])
        assert _same(finalize_ssv(prof, got, db.lengths), finalize_ssv(prof, ref, db.lengths))


@pytest.mark.parametrize("table", TABLES)
def test_gpu_tables(hmm_dir, dbs, table):
    model, dbname = table.split("_vs_")
    want = load_table(hmm_dir / "expected" / ("%s.ssv.tsv" % table))
    res = score_database(byte_profile(read_hmms(hmm_dir / ("%s.hmm" % model))[0]), dbs[dbname],
                         backend="gpu")
    for row, w in zip(format_rows(res, dbs[dbname]), want):
        f = row.split("\t")
        assert (f[1], f[3], f[4], f[8]) == (w["seq"], w["ssv_nats"], w["msv_nats"], w["pass_F1"])


def test_gpu_random_models_and_edge_lengths():
    from mbgpu.cuda.ssv import ssv_raw_gpu
    from mbgpu.hmm.hmmfile import HMM

    rng = np.random.default_rng(7)
    for M in (1, 2, 7, 8, 9, 63, 100, 300, 1500):
        mat = rng.dirichlet(np.full(20, 0.2), size=M).astype(np.float32)
        prof = byte_profile(HMM("r%d" % M, M, mat, -9.0, 0.7))
        seqs = [rng.integers(0, 29, size=int(L)).astype(np.uint8)
                for L in list(range(1, 10)) + list(rng.integers(1, 3000, size=40))]
        cons = mat.argmax(axis=1).astype(np.uint8)
        seqs += [np.concatenate([seqs[-1][:50], cons[:k], seqs[-2][:30]]) for k in (1, 5, 20, M)]
        db = pack(seqs, [str(i) for i in range(len(seqs))])
        got, ref = ssv_raw_gpu(prof, db), ssv_raw(prof, db)
        assert _same(finalize_ssv(prof, got, db.lengths), finalize_ssv(prof, ref, db.lengths)), M
