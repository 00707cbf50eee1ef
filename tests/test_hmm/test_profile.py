"""Byte-scaled profile (rb, sb, bias, tbm, tec, tjb) equals pyhmmer's OptimizedProfile exactly."""
import numpy as np
import pytest

from mbgpu.hmm.hmmfile import read_hmms
from mbgpu.hmm.profile import byte_profile, roundf

from .hmm_util import MODELS, random_hmm_file

pytest.importorskip("pyhmmer")


def _pyhmmer_om(path):
    from pyhmmer.easel import Alphabet
    from pyhmmer.plan7 import Background, HMMFile, Profile

    abc = Alphabet.amino()
    with HMMFile(str(path)) as fh:
        hmm = next(iter(fh))
    gm = Profile(hmm.M, abc)
    gm.configure(hmm, Background(abc), L=400)
    return gm.to_optimized()


def _unstripe(vec: np.ndarray, M: int) -> np.ndarray:
    """HMMER striped byte vectors [Kp, 16*Q(+extra)] -> [M, Kp] in model order."""
    Q = max(2, (M - 1) // 16 + 1)
    k = np.arange(1, M + 1)
    q, z = (k - 1) % Q, (k - 1) // Q
    return vec[:, q * 16 + z].T


def _check(path):
    om = _pyhmmer_om(path)
    prof = byte_profile(read_hmms(path)[0])
    M = prof.M
    rbv = np.array(om.rbv, dtype=np.int64)
    sbv = np.array(om.sbv, dtype=np.uint8).view(np.int8).astype(np.int64)
    assert (om.bias_b, om.tbm, om.tec) == (prof.bias, prof.tbm, prof.tec)
    np.testing.assert_array_equal(_unstripe(rbv, M), prof.rb[:, :29])
    np.testing.assert_array_equal(_unstripe(sbv, M), prof.sb[:, :29])
    for L in (1, 7, 100, 400, 1337, 100000):
        om.L = L
        assert om.tjb == int(prof.tjb(L)), L


@pytest.mark.parametrize("name", MODELS)
def test_oracle_models(hmm_dir, name):
    _check(hmm_dir / ("%s.hmm" % name))


@pytest.mark.parametrize("M,seed", [(1, 1), (5, 2), (37, 3), (200, 4), (613, 5)])
def test_random_models(tmp_path, M, seed):
    _check(random_hmm_file(tmp_path, M, seed))


def test_roundf_halves_away_from_zero():
    np.testing.assert_array_equal(roundf(np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997], np.float32)),
                                  [1, 2, 3, -1, -3, 0])
