"""Each parameter move (Dirichlet and Slider on a simplex, Multiplier, Slider(Pinvar)) leaves a known
distribution invariant.

Chains start from exact draws of a target, take Metropolis-Hastings steps with one move alone (the
move's own log Hastings ratio, as the sampler uses it), and their end states are again target draws:
KS tests on every component. Targets are not flat so that a wrong Hastings term shows.
"""
import math

import numpy as np
import pytest
from scipy import stats

from mbgpu.sampler.param_moves import ParamMove

P_MIN = 1e-3
N_CHAINS, STEPS = 2000, 20


def _run(move, log_target, draw, seed):
    rng = np.random.default_rng(seed)
    out, accepted = [], 0
    for _ in range(N_CHAINS):
        x = draw(rng)
        lp = log_target(x)
        for _ in range(STEPS):
            got = move.propose(x, rng)
            if got is None:
                continue
            new, log_h = got
            lp_new = log_target(new)
            if math.log(rng.random()) < lp_new - lp + log_h:
                x, lp = new, lp_new
                accepted += 1
        out.append(np.array(x, float))
    return np.array(out), accepted / (N_CHAINS * STEPS)


def _dirichlet_target(a):
    a = np.asarray(a, float)
    return (lambda x: float(((a - 1) * np.log(x)).sum()), lambda rng: rng.dirichlet(a),
            [stats.beta(ai, a.sum() - ai) for ai in a])


@pytest.mark.parametrize("kind, tuning, alphas", [
    ("dirichlet", 100.0, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),   # Dirichlet(Revmat), MrBayes' default tuning
    ("dirichlet", 5.0, (2.0, 3.0, 4.0, 5.0)),               # Dirichlet(Pi), large steps
    ("dirichlet", 5.0, (3.0, 1.5)),                         # Dirichlet(Tratio): kappa's pair, beta prior
    ("slider", 0.15, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),       # Slider(Revmat), MrBayes' default tuning
    ("slider", 0.20, (1.0, 1.0, 2.0, 3.0)),                 # Slider(Pi), MrBayes' default tuning
    ("slider", 0.8, (1.0, 2.0, 1.0, 1.0, 3.0, 1.0)),        # large steps: reflection at the bounds matters
])
def test_simplex_move_leaves_dirichlet_invariant(kind, tuning, alphas):
    log_t, draw, margins = _dirichlet_target(alphas)
    move = ParamMove("m", 0, kind, 1.0, tuning, "alpha" if kind == "dirichlet" else "delta")
    xs, acc = _run(move, log_t, draw, seed=10 * len(alphas) + int(10 * tuning))
    assert acc > 0.05, acc
    assert np.allclose(xs.sum(axis=1), 1.0)
    for i, m in enumerate(margins):
        assert stats.kstest(xs[:, i], m.cdf).pvalue > P_MIN, (i, stats.kstest(xs[:, i], m.cdf))


@pytest.mark.parametrize("tuning", [2.0 * math.log(1.5), 3.0])
def test_multiplier_leaves_exponential_invariant(tuning):
    """Multiplier(Alpha) with shapepr=exponential(1) (MrBayes' default), bounds (1e-5, 200)."""
    move = ParamMove("Multiplier(Alpha)", 0, "multiplier", 1.0, tuning, "lambda", bounds=(1e-5, 200.0))
    xs, acc = _run(move, lambda x: -float(x[0]), lambda rng: np.array([rng.exponential(1.0)]), seed=3)
    assert acc > 0.05, acc
    assert stats.kstest(xs[:, 0], stats.expon().cdf).pvalue > P_MIN


@pytest.mark.parametrize("tuning", [0.1, 0.9])
def test_pinvar_slider_leaves_beta_invariant(tuning):
    """Slider(Pinvar) on (0, 1) with a Beta(2, 5) target (uniform prior times a likelihood-like term)."""
    target = stats.beta(2.0, 5.0)
    log_t = lambda x: math.log(x[0]) + 4.0 * math.log1p(-x[0])  # noqa: E731
    move = ParamMove("Slider(Pinvar)", 0, "pinvar_slider", 1.0, tuning, "delta")
    xs, acc = _run(move, log_t, lambda rng: np.array([rng.beta(2.0, 5.0)]), seed=4)
    assert acc > 0.05, acc
    assert stats.kstest(xs[:, 0], target.cdf).pvalue > P_MIN


@pytest.mark.parametrize("kind, tuning", [("dirichlet", 50.0), ("slider", 0.05), ("slider", 0.6)])
def test_rate_multiplier_moves_leave_their_prior_invariant(kind, tuning):
    """Rate multipliers m of divisions with 4, 8 and 12 characters under ratepr=dirichlet(1,2,3): the moves
    act on w = n m / N (move_table gives them `scale`), the chain on m with the sampler's own prior
    (mbgpu.priors); the end states' w must be Dirichlet(1,2,3). Moving m as if it were w rejects all."""
    from mbgpu.commands.params import PriorValue
    from mbgpu.parameters import FreeParameter
    from mbgpu.priors import parameter_log_prior

    n = np.array([4.0, 8.0, 12.0])
    scale = n / n.sum()
    p = FreeParameter("ratemult", (1, 2, 3), PriorValue("Dirichlet", (1.0, 2.0, 3.0)), np.ones(3))
    n_chars = {1: 4.0, 2: 8.0, 3: 12.0}
    move = ParamMove("m", 0, kind, 1.0, tuning, "alpha" if kind == "dirichlet" else "delta", scale=scale)
    xs, acc = _run(move, lambda m: parameter_log_prior(p, n_chars, m),
                   lambda rng: rng.dirichlet((1.0, 2.0, 3.0)) / scale, seed=int(7 * tuning))
    assert acc > 0.05, acc
    w = xs * scale
    assert np.allclose(w.sum(axis=1), 1.0)
    for i, a in enumerate((1.0, 2.0, 3.0)):
        assert stats.kstest(w[:, i], stats.beta(a, 6.0 - a).cdf).pvalue > P_MIN, i
