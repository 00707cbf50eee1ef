"""numpy SSV/MSV reference vs pyhmmer (HMMER 3.4) on random models and sequences, and a numpy
emulation of the GPU kernel's striped lanes vs the reference."""
import numpy as np
import pytest

from mbgpu.cuda.ssv import LANES, NROWS, striped_table
from mbgpu.hmm.alphabet import PAD
from mbgpu.hmm.hmmfile import read_hmms
from mbgpu.hmm.profile import byte_profile
from mbgpu.hmm.reference import msv_score, ssv_raw
from mbgpu.hmm.scores import finalize_ssv

from .hmm_util import packed, pyhmmer_scores, random_hmm_file, random_sequences

pytest.importorskip("pyhmmer")


def _same(a, b):
    """Equal float32 scores with nan == nan and inf == inf."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(a[~np.isnan(a)], b[~np.isnan(b)])


@pytest.mark.parametrize("M,seed", [(3, 11), (24, 12), (90, 13), (333, 14), (700, 15)])
def test_ssv_and_msv_match_pyhmmer(tmp_path, M, seed):
    rng = np.random.default_rng(seed)
    path = random_hmm_file(tmp_path, M, seed)
    seqs = random_sequences(rng, 60, 600, path)
    want_ssv, want_msv, _ = pyhmmer_scores(path, seqs)
    prof = byte_profile(read_hmms(path)[0])
    db = packed(seqs)
    got = finalize_ssv(prof, ssv_raw(prof, db), db.lengths)
    assert _same(got, want_ssv)
    for i in np.flatnonzero(np.isnan(got)):
        assert _same(msv_score(prof, seqs[i]), want_msv[i])


def test_random_cases_cover_overflow(tmp_path):
    """Planted consensus segments overflow (inf) next to ordinary finite scores."""
    rng = np.random.default_rng(16)
    path = random_hmm_file(tmp_path, 300, 16)
    seqs = random_sequences(rng, 80, 1500, path)
    want, _, _ = pyhmmer_scores(path, seqs)
    prof = byte_profile(read_hmms(path)[0])
    db = packed(seqs)
    got = finalize_ssv(prof, ssv_raw(prof, db), db.lengths)
    assert np.isinf(want).any() and np.isfinite(want).any()
    assert _same(got, want)


def emulate_kernel(prof, seq: np.ndarray) -> int:
    """What ssv.cu computes for one sequence, all h threads at once, int16 wrap-around included."""
    tab = striped_table(prof.sb).view(np.int16).reshape(NROWS, -1, LANES).astype(np.int64)
    h = tab.shape[1]
    t = np.arange(h)
    r = np.full((h, LANES), -128, dtype=np.int64)
    best = np.full((h, LANES), -128, dtype=np.int64)
    padded = np.concatenate([seq, np.full(-len(seq) % 4, PAD, np.uint8)])
    for x in padded:
        r = ((r + tab[x, t, :] + 32768) % 65536) - 32768
        r = np.maximum(r, -128)
        best = np.maximum(best, r)
        t = t + 1
        wrap = t == h
        r[wrap, 1:] = r[wrap, :-1]
        r[wrap, 0] = -128
        t[wrap] = 0
    return int(best.max())


@pytest.mark.parametrize("M,seed", [(1, 21), (8, 22), (9, 23), (61, 24), (250, 25)])
def test_kernel_layout_equals_reference(tmp_path, M, seed):
    rng = np.random.default_rng(seed)
    path = random_hmm_file(tmp_path, M, seed)
    prof = byte_profile(read_hmms(path)[0])
    seqs = random_sequences(rng, 12, 300, path)
    db = packed(seqs)
    ref = ssv_raw(prof, db)
    emu = np.array([emulate_kernel(prof, s) for s in seqs])
    L = db.lengths
    assert _same(finalize_ssv(prof, emu, L), finalize_ssv(prof, ref, L))
    below = ref < -1 - prof.bias
    np.testing.assert_array_equal(emu[below], ref[below])
