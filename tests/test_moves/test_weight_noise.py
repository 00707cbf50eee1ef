"""ParsSPR's perturbed pattern weights (mbgpu.moves.weight_noise) against the distribution MrBayes
defines: each of a pattern's c sites adds +1 with probability r and -1 with probability r.

The reference distribution is computed here by brute-force enumeration of the per-site outcomes (3^c
combinations), not by the module's convolution, and the draws are checked with chi-square tests.
"""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mbgpu.moves.weight_noise import WeightNoise, perturbed_weights


def enumerated_pmf(c: int, r: float) -> dict[int, float]:
    """P(sum of c per-site steps = k) by listing every combination of site outcomes."""
    pmf: dict[int, float] = {}
    for outcome in itertools.product((-1, 0, 1), repeat=c):
        p = math.prod(r if s else 1.0 - 2.0 * r for s in outcome)
        pmf[sum(outcome)] = pmf.get(sum(outcome), 0.0) + p
    return pmf


@pytest.mark.parametrize("c, r", [(1, 0.05), (2, 0.05), (3, 0.2), (5, 0.05), (8, 0.2), (9, 0.05), (11, 0.2)])
def test_steps_follow_the_per_site_distribution(c, r):
    """Patterns of c sites (table path for c <= 8, binomials above) mixed with other counts."""
    n = 60_000
    weights = np.resize(np.array([float(c), 1.0, 4.0, 12.0]), n)   # several groups in one vector
    mine = np.flatnonzero(weights == c)
    step = (perturbed_weights(weights, r, np.random.default_rng(100 + c)) - weights)[mine]
    pmf = enumerated_pmf(c, r)
    ks = sorted(pmf)
    observed = np.array([np.count_nonzero(step == k) for k in ks], dtype=float)
    expected = np.array([pmf[k] for k in ks]) * step.size
    assert observed.sum() == step.size                       # every step within -c..c
    keep = expected >= 5                                     # pool the sparse tails
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_zero_and_fractional_weights():
    r = 0.1
    w = np.array([0.0, 0.0, 2.5, 0.4, 1.0] * 2000)
    got = perturbed_weights(w, r, np.random.default_rng(3))
    step = got - w
    assert np.all(step[w == 0.0] == 0.0)
    assert np.all(np.abs(step[w == 2.5]) <= 3) and np.all(np.abs(step[w == 0.4]) <= 1)   # c = ceil(w)
    assert np.allclose(step, np.round(step), rtol=0, atol=1e-12)


def test_integer_draw_equals_float_draw_and_never_goes_negative():
    w = np.array([1, 1, 2, 7, 30, 0, 1] * 500, dtype=float)
    noise = WeightNoise(w, 0.3)
    a = noise.draw_integer(np.random.default_rng(5))
    b = noise.draw(np.random.default_rng(5))
    assert a.dtype == np.int64 and np.array_equal(a, b) and a.min() >= 0
    assert WeightNoise(np.array([1.5, 2.0]), 0.05).draw_integer(np.random.default_rng(0)) is None


def test_no_noise_at_r_zero():
    w = np.array([1.0, 5.0, 30.0])
    assert np.array_equal(perturbed_weights(w, 0.0, np.random.default_rng(0)), w)
