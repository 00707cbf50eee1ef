"""The core's per-chain generator (mbgpu.core.rng): the distributions it draws and its seeding."""
import numpy as np
import pytest
from scipy import stats

from mbgpu.core import rng as R


def _draws(f, n, *args, seed=3):
    s = R.seed_states(seed, [(0, 0)])[0]
    return np.array([f(s, *args) for _ in range(n)])


def test_seeding_is_deterministic_and_distinct():
    a = R.seed_states(7, [(0, 0), (0, 1), (1, 0)])
    assert a.dtype == np.uint64 and a.shape == (3, 4)
    assert np.array_equal(a, R.seed_states(7, [(0, 0), (0, 1), (1, 0)]))
    assert len({row.tobytes() for row in a}) == 3


def test_uniform_is_in_the_open_interval_and_uniform():
    u = _draws(R.uniform, 50_000)
    assert u.min() > 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3


@pytest.mark.parametrize("shape", [0.3, 1.0, 2.5, 40.0])
def test_gamma_matches_scipy(shape):
    g = _draws(R.gamma, 30_000, shape)
    assert stats.kstest(g, stats.gamma(shape).cdf).pvalue > 1e-3


def test_normal_exponential_randint_and_pick():
    assert stats.kstest(_draws(R.normal, 30_000), "norm").pvalue > 1e-3
    assert stats.kstest(_draws(R.exponential, 30_000, 2.0), stats.expon(scale=0.5).cdf).pvalue > 1e-3
    k = _draws(R.randint, 30_000, 7)
    assert stats.chisquare(np.bincount(k, minlength=7)).pvalue > 1e-3
    cdf = np.cumsum([0.1, 0.2, 0.3, 0.4])
    picks = np.bincount(_draws(R.pick, 40_000, cdf, seed=4), minlength=4)
    assert stats.chisquare(picks, 40_000 * np.array([0.1, 0.2, 0.3, 0.4])).pvalue > 1e-3


def test_dirichlet_means():
    s = R.seed_states(5, [(0, 0)])[0]
    alpha = np.array([0.5, 2.0, 7.5])
    out = np.empty(3)
    rows = []
    for _ in range(20_000):
        R.dirichlet(s, alpha, out)
        rows.append(out.copy())
    rows = np.array(rows)
    assert np.allclose(rows.sum(axis=1), 1.0)
    assert rows.mean(axis=0) == pytest.approx(alpha / alpha.sum(), abs=0.005)
