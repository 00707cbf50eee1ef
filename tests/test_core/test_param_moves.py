"""The compiled parameter moves (mbgpu.core.param_moves) against their specification, the Python moves of
mbgpu.sampler.param_moves: each leaves a known distribution invariant (the MH driver and targets of
tests/test_moves/test_param_invariance.py, through an adapter with ParamMove's `propose`), bounds and
MIN_SIMPLEX are kept, x is untouched on a rejection, the autotuning rule is `tune`'s, and from one fixed
value the proposals have the Python move's distribution (KS on every component and on log Hastings,
same rejection rate)."""
import math

import numpy as np
import pytest
from scipy import stats

from mbgpu.core import param_moves as pm
from mbgpu.priors import log_dirichlet as log_dirichlet_pdf
from mbgpu.sampler.param_moves import MIN_SIMPLEX, ParamMove, tune
from mbgpu.sampler.param_moves import reflect as py_reflect
from tests.test_moves.test_param_invariance import P_MIN, _dirichlet_target, _run

P_SAME = 1e-4     # several comparisons per test of the proposal distributions


class Compiled:
    """ParamMove's propose(value, rng) -> (new, log Hastings) or None, by the compiled move."""

    def __init__(self, kind, tuning, bounds=(1e-5, 100.0), scale=None):
        self.kind, self.tuning, self.bounds, self.scale = kind, float(tuning), bounds, scale

    def propose(self, value, rng):
        s = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        x = np.array(value, dtype=np.float64)
        scale = np.ones(x.size) if self.scale is None else np.asarray(self.scale, dtype=np.float64)
        if self.kind == "dirichlet":
            log_h = pm.dirichlet_move(s, x, self.tuning, scale)
        elif self.kind == "slider":
            log_h = pm.simplex_slider(s, x, self.tuning, scale)
        elif self.kind == "multiplier":
            log_h = pm.log_multiplier(s, x, self.tuning, self.bounds[0], self.bounds[1])
        else:
            log_h = pm.pinvar_slider(s, x, self.tuning)
        if log_h == -math.inf:
            assert np.array_equal(x, value)          # a rejected move leaves x as it was
            return None
        return x, log_h


@pytest.mark.parametrize("kind, tuning, alphas", [
    ("dirichlet", 100.0, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),   # Dirichlet(Revmat), MrBayes' default tuning
    ("dirichlet", 5.0, (2.0, 3.0, 4.0, 5.0)),               # Dirichlet(Pi), large steps
    ("dirichlet", 5.0, (3.0, 1.5)),                         # Dirichlet(Tratio): kappa's pair, beta prior
    ("slider", 0.15, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),       # Slider(Revmat), MrBayes' default tuning
    ("slider", 0.8, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),        # large steps: reflection at the bounds matters
])
def test_simplex_move_leaves_dirichlet_invariant(kind, tuning, alphas):
    log_t, draw, margins = _dirichlet_target(alphas)
    xs, acc = _run(Compiled(kind, tuning), log_t, draw, seed=10 * len(alphas) + int(10 * tuning))
    assert acc > 0.05, acc
    assert np.allclose(xs.sum(axis=1), 1.0)
    for i, m in enumerate(margins):
        assert stats.kstest(xs[:, i], m.cdf).pvalue > P_MIN, (i, stats.kstest(xs[:, i], m.cdf))


@pytest.mark.parametrize("tuning", [2.0 * math.log(1.5), 3.0])
def test_multiplier_leaves_exponential_invariant(tuning):
    """Multiplier(Alpha) with shapepr=exponential(1) (MrBayes' default), bounds (1e-5, 200)."""
    move = Compiled("multiplier", tuning, bounds=(1e-5, 200.0))
    xs, acc = _run(move, lambda x: -float(x[0]), lambda rng: np.array([rng.exponential(1.0)]), seed=3)
    assert acc > 0.05, acc
    assert stats.kstest(xs[:, 0], stats.expon().cdf).pvalue > P_MIN


@pytest.mark.parametrize("tuning", [0.1, 0.9])
def test_pinvar_slider_leaves_beta_invariant(tuning):
    """Slider(Pinvar) on (0, 1) with a Beta(2, 5) target (uniform prior times a likelihood-like term)."""
    target = stats.beta(2.0, 5.0)
    log_t = lambda x: math.log(x[0]) + 4.0 * math.log1p(-x[0])  # noqa: E731
    xs, acc = _run(Compiled("pinvar_slider", tuning), log_t, lambda rng: np.array([rng.beta(2.0, 5.0)]), seed=4)
    assert acc > 0.05, acc
    assert stats.kstest(xs[:, 0], target.cdf).pvalue > P_MIN


def test_pinvar_slider_leaves_uniform_invariant():
    """With the uniform prior alone (no data), large steps: reflection at 0 and 1 - 1e-6."""
    xs, acc = _run(Compiled("pinvar_slider", 0.9), lambda x: 0.0, lambda rng: rng.uniform(0, 1 - 1e-6, 1), seed=5)
    assert acc == 1.0
    assert stats.kstest(xs[:, 0], stats.uniform(0, 1 - 1e-6).cdf).pvalue > P_MIN


@pytest.mark.parametrize("kind, tuning", [("dirichlet", 50.0), ("slider", 0.05), ("slider", 0.6)])
def test_rate_multiplier_moves_leave_their_prior_invariant(kind, tuning):
    """Rate multipliers m of divisions with 4, 8 and 12 characters under ratepr=dirichlet(1,2,3), moved as
    w = n m / N through `scale`, with the sampler's own prior on m: end states' w are Dirichlet(1,2,3)."""
    from mbgpu.commands.params import PriorValue
    from mbgpu.parameters import FreeParameter
    from mbgpu.priors import parameter_log_prior

    n = np.array([4.0, 8.0, 12.0])
    scale = n / n.sum()
    p = FreeParameter("ratemult", (1, 2, 3), PriorValue("Dirichlet", (1.0, 2.0, 3.0)), np.ones(3))
    n_chars = {1: 4.0, 2: 8.0, 3: 12.0}
    xs, acc = _run(Compiled(kind, tuning, scale=scale), lambda m: parameter_log_prior(p, n_chars, m),
                   lambda rng: rng.dirichlet((1.0, 2.0, 3.0)) / scale, seed=int(7 * tuning))
    assert acc > 0.05, acc
    w = xs * scale
    assert np.allclose(w.sum(axis=1), 1.0)
    for i, a in enumerate((1.0, 2.0, 3.0)):
        assert stats.kstest(w[:, i], stats.beta(a, 6.0 - a).cdf).pvalue > P_MIN, i


def test_bounds_and_min_simplex_are_kept():
    rng = np.random.default_rng(1)
    x = np.array([2e-6, 0.5, 0.3, 0.2 - 2e-6])
    for _ in range(3000):
        got = Compiled("slider", 5.0).propose(x, rng)
        assert got is not None and got[1] == 0.0
        assert got[0].min() >= MIN_SIMPLEX * (1 - 1e-12) and got[0].sum() == pytest.approx(1.0)
        got = Compiled("dirichlet", 2.0).propose(x, rng)
        if got is not None:
            assert got[0].min() >= MIN_SIMPLEX and got[0].sum() == pytest.approx(1.0)
        m = Compiled("multiplier", 8.0, bounds=(1e-5, 200.0)).propose(np.array([150.0]), rng)[0][0]
        assert 1e-5 <= m <= 200.0 * (1 + 1e-12)
        q = Compiled("pinvar_slider", 3.0).propose(np.array([0.999]), rng)[0][0]
        assert 0.0 <= q <= 1.0 - 1e-6
    # an unnormalised value is moved as its normalisation (as the Python moves do)
    got = Compiled("slider", 0.1).propose(np.array([2.0, 2.0, 4.0]), rng)
    assert got[0].sum() == pytest.approx(1.0)
    # reflect: as the Python one, including the empty interval of a tiny pair (its lower end)
    for _ in range(2000):
        a, lo, w = rng.normal(0, 3), rng.normal(0, 1), rng.choice([rng.exponential(1.0), -0.1, 0.0])
        assert pm.reflect(a, lo, lo + w) == pytest.approx(py_reflect(a, lo, lo + w), rel=1e-12, abs=1e-12)


def test_multiplier_hastings_is_the_log_ratio():
    rng = np.random.default_rng(2)
    for _ in range(200):
        old = np.array([rng.exponential(20.0) + 1e-5])
        new, log_h = Compiled("multiplier", 3.0, bounds=(1e-5, 200.0)).propose(old, rng)
        assert log_h == pytest.approx(math.log(new[0] / old[0]))


def test_dirichlet_hastings_matches_the_densities():
    rng = np.random.default_rng(3)
    for scale in (None, np.array([0.1, 0.3, 0.2, 0.4])):
        sc = np.ones(4) if scale is None else scale
        for _ in range(50):
            old = rng.dirichlet(np.ones(4) * 3) / sc
            new, log_h = Compiled("dirichlet", 20.0, scale=scale).propose(old, rng)
            w, w2 = old * sc / (old * sc).sum(), new * sc
            assert w2.sum() == pytest.approx(1.0)
            expect = log_dirichlet_pdf(w, 20.0 * w2) - log_dirichlet_pdf(w2, 20.0 * w)
            assert log_h == pytest.approx(expect, rel=1e-9, abs=1e-9)
    for a in (np.array([0.5, 1.0, 7.0]), np.array([2.0, 3.0])):
        x = rng.dirichlet(a)
        assert pm.log_dirichlet_pdf(x, a) == pytest.approx(log_dirichlet_pdf(x, a))


def test_tune_is_the_python_rule():
    rng = np.random.default_rng(4)
    for _ in range(300):
        name = ["alpha", "delta", "lambda"][int(rng.integers(3))]
        move = ParamMove("m", 0, "slider", 1.0, float(rng.uniform(0.01, 500)), name)
        move.counts["batches"] = int(rng.integers(1, 20000))
        rate, before = float(rng.random()), move.tuning
        tune(move, rate)
        assert pm.tune_param(before, rate, move.target, move.counts["batches"], name == "alpha") == \
            pytest.approx(move.tuning, rel=1e-14)
    assert pm.tune_param(1.0, 0.5, 0.25, 1, False) == pytest.approx(math.exp(0.01))
    assert pm.tune_param(1.0, 0.5, 0.25, 1, True) == pytest.approx(math.exp(-0.01))
    assert pm.tune_param(1.0, 0.25, 0.25, 1, False) == pytest.approx(math.exp(-0.01))   # not above target


def _sample(move, value, n, seed):
    rng = np.random.default_rng(seed)
    out, logh, rejected = [], [], 0
    for _ in range(n):
        got = move.propose(value, rng)
        if got is None:
            rejected += 1
            continue
        out.append(np.asarray(got[0], float))
        logh.append(got[1])
    return np.array(out), np.array(logh), rejected / n


@pytest.mark.parametrize("kind, tuning, value, scale", [
    ("dirichlet", 100.0, (0.1, 0.3, 0.05, 0.15, 0.3, 0.1), None),
    ("dirichlet", 2.0, (0.002, 0.3, 0.2, 0.498), None),             # frequent MIN_SIMPLEX rejections
    ("dirichlet", 30.0, (0.8, 1.1, 1.0), (4 / 24, 8 / 24, 12 / 24)),  # rate multipliers
    ("slider", 0.15, (0.1, 0.3, 0.05, 0.15, 0.3, 0.1), None),
    ("slider", 0.9, (3e-6, 0.3, 0.2, 0.5 - 3e-6), None),            # reflection at MIN_SIMPLEX / sum
    ("slider", 0.3, (0.8, 1.1, 1.0), (4 / 24, 8 / 24, 12 / 24)),
    ("multiplier", 2 * math.log(1.5), (0.7,), None),
    ("multiplier", 6.0, (150.0,), None),                            # reflection at both bounds
    ("pinvar_slider", 0.1, (0.3,), None),
    ("pinvar_slider", 0.9, (0.98,), None),
])
def test_same_proposal_distribution_as_the_python_move(kind, tuning, value, scale):
    value = np.array(value, float)
    scale = None if scale is None else np.array(scale)
    tname = {"dirichlet": "alpha", "multiplier": "lambda"}.get(kind, "delta")
    bounds = (1e-5, 200.0)
    n = 10000 if value.size > 1 else 4000
    xp, hp, rp = _sample(ParamMove("m", 0, kind, 1.0, tuning, tname, bounds=bounds, scale=scale), value, n, 1)
    xc, hc, rc = _sample(Compiled(kind, tuning, bounds=bounds, scale=scale), value, n, 2)
    se = math.sqrt(max(rp * (1 - rp), 1e-12) * 2 / n)
    assert abs(rp - rc) < 4.5 * se + 1e-12, (rp, rc)
    assert xp.shape[1] == xc.shape[1] == value.size
    for i in range(value.size):
        assert stats.ks_2samp(xp[:, i], xc[:, i]).pvalue > P_SAME, i
    if np.ptp(hp) > 0:
        assert stats.ks_2samp(hp, hc).pvalue > P_SAME
    else:
        assert np.all(hc == hp[0])
    w0 = value if scale is None else value * scale
    w0 = w0 / w0.sum() if value.size > 1 else w0
    wp, wc = (xp, xc) if scale is None else (xp * scale, xc * scale)
    step_p, step_c = np.abs(wp - w0).sum(axis=1), np.abs(wc - w0).sum(axis=1)     # the step's size
    assert stats.ks_2samp(step_p, step_c).pvalue > P_SAME
    if kind == "slider":                     # which pair moved: uniform over the pairs, as in Python
        pairs = lambda w: [tuple(np.argsort(-np.abs(r - w0))[:2].tolist()) for r in w]   # noqa: E731
        pp, pc = pairs(wp), pairs(wc)
        keys = sorted(set(pp) | set(pc))
        table = np.array([[pp.count(k) for k in keys], [pc.count(k) for k in keys]])
        assert stats.chi2_contingency(table).pvalue > P_SAME
