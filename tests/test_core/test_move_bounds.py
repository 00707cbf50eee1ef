"""Every compiled move driven at the edges of its state space (issue 20): branch lengths at, beyond and
below MrBayes' limits (start trees may hold such lengths: MrBayes keeps them as given), tuning values at
their autotuning limits, parameters at the corners of their domains. No proposal may give a log
Hastings ratio that is nan or +inf, a length or value that is not a finite positive number, or a broken
tree; a proposal from inside the limits stays inside them."""
import math

import numpy as np
import pytest

from mbgpu.core import layout as L
from mbgpu.core import param_moves as pm
from mbgpu.core.branch_moves import BRLENS_MAX, BRLENS_MIN, LAMBDA_MAX, LAMBDA_MIN
from mbgpu.core.pars_spr import prepare_pars_data
from mbgpu.core.rng import seed_states
from mbgpu.core.step import _propose_tree
from mbgpu.core.trees import from_arrays, to_arrays
from mbgpu.moves import check_tree
from mbgpu.tree import random_tree

N_TIPS = 9
DRAWS = 150
TREE_MOVES = {L.EXT_SPR: [(0.0, LAMBDA_MIN), (0.5, 0.0), (0.99, LAMBDA_MAX)],
              L.EXT_TBR: [(0.0, LAMBDA_MIN), (0.5, 0.0), (0.99, LAMBDA_MAX)],
              L.NNI: [()],
              L.PARS_SPR: [(0.1, 0.05, 0.03, LAMBDA_MIN), (10.0, 0.5, 5.0, LAMBDA_MAX), (0.0, 0.0, 1e-9, 0.098)],
              L.BRANCH_MULTIPLIER: [(LAMBDA_MIN,), (LAMBDA_MAX,)],
              L.NODE_SLIDER: [(LAMBDA_MIN,), (LAMBDA_MAX,)],
              L.TREE_LENGTH: [(LAMBDA_MIN,), (LAMBDA_MAX,)]}
LENGTHS = {"at the minimum": lambda r, n: np.full(n, BRLENS_MIN),
           "at the maximum": lambda r, n: np.full(n, BRLENS_MAX),
           "beyond the maximum": lambda r, n: np.full(n, 2.5 * BRLENS_MAX),
           "below the minimum": lambda r, n: np.full(n, 1e-12),
           "mixed extremes": lambda r, n: r.choice([1e-12, BRLENS_MIN, 1.0, BRLENS_MAX, 300.0], n)}


def _pars_data(rng):
    """ParsSPR's arrays for random DNA-like data of N_TIPS taxa (two partitions, ambiguity included)."""
    parts = [(rng.choice([1, 2, 4, 8, 15], size=(N_TIPS, 70)).astype(np.uint32), rng.integers(1, 9, 70)),
             (rng.choice([1, 2, 4, 8], size=(N_TIPS, 20)).astype(np.uint32), rng.integers(1, 3, 20).astype(float))]
    return prepare_pars_data(parts, None, None, N_TIPS, 0.05)


@pytest.mark.parametrize("kind", sorted(TREE_MOVES))
@pytest.mark.parametrize("lengths", sorted(LENGTHS))
def test_tree_moves_at_the_limits(kind, lengths):
    rng = np.random.default_rng(kind * 31 + len(lengths))
    pars = _pars_data(rng)
    s = seed_states(7 + kind, [(0,)])[0]
    inside = lengths in ("at the minimum", "at the maximum")
    for tuning in TREE_MOVES[kind]:
        t = np.zeros(L.N_TUNING)
        t[:len(tuning)] = tuning
        for _ in range(DRAWS // len(TREE_MOVES[kind]) + 1):
            tree = random_tree(N_TIPS, rng)
            parent, kids, brlen = to_arrays(tree)
            brlen[:] = np.where(parent >= 0, LENGTHS[lengths](rng, parent.size), 0.0)
            log_h = _propose_tree(kind, parent, kids, brlen, N_TIPS, s, t, BRLENS_MIN, BRLENS_MAX, 0, pars)
            assert not math.isnan(log_h) and log_h != math.inf, (kind, tuning, log_h)
            if log_h == -math.inf:
                continue
            check_tree(from_arrays(N_TIPS, parent, brlen))
            live = brlen[parent >= 0]
            assert np.all(np.isfinite(live)) and np.all(live > 0.0), (kind, tuning, live)
            if inside:
                assert np.all((live >= BRLENS_MIN) & (live <= BRLENS_MAX)), (kind, tuning, live)


SIMPLEX_STARTS = [np.array([1.0 - 3e-6, 1e-6, 1e-6, 1e-6]), np.array([0.5, 0.5 - 1e-6, 5e-7, 5e-7]),
                  np.full(6, 1.0 / 6.0), np.array([1.0 - 1e-6, 1e-6])]


@pytest.mark.parametrize("alpha", [1e-3, 1.0, 1e4])
def test_dirichlet_move_at_the_corners(alpha):
    s = seed_states(11, [(0,)])[0]
    for start in SIMPLEX_STARTS:
        for _ in range(DRAWS):
            x = start.copy()
            log_h = pm.dirichlet_move(s, x, alpha, np.ones(x.size))
            assert not math.isnan(log_h) and log_h != math.inf
            if log_h != -math.inf:
                assert np.all(np.isfinite(x)) and np.all(x >= pm.MIN_SIMPLEX) and abs(x.sum() - 1.0) < 1e-12


@pytest.mark.parametrize("delta", [1e-6, 0.3, 50.0])
def test_simplex_slider_at_the_corners(delta):
    s = seed_states(12, [(0,)])[0]
    for start in SIMPLEX_STARTS:
        for _ in range(DRAWS):
            x = start.copy()
            log_h = pm.simplex_slider(s, x, delta, np.ones(x.size))
            assert log_h in (0.0, -math.inf)
            if log_h == 0.0:
                assert np.all(np.isfinite(x)) and np.all(x > 0.0) and abs(x.sum() - 1.0) < 1e-12
                assert np.all(x >= pm.MIN_SIMPLEX * (1 - 1e-9)) or np.any(start < pm.MIN_SIMPLEX)


@pytest.mark.parametrize("start", [1e-5, 200.0, 1e-9, 1e4])
@pytest.mark.parametrize("lam", [LAMBDA_MIN, 0.8, LAMBDA_MAX, 200.0])
def test_log_multiplier_at_and_beyond_its_bounds(start, lam):
    s = seed_states(13, [(0,)])[0]
    lo, hi = 1e-5, 200.0
    for _ in range(DRAWS):
        x = np.array([start])
        log_h = pm.log_multiplier(s, x, lam, lo, hi)
        assert math.isfinite(log_h)
        assert lo * (1 - 1e-12) <= x[0] <= hi * (1 + 1e-12)


@pytest.mark.parametrize("start", [0.0, pm.PINVAR_MAX, 0.5])
@pytest.mark.parametrize("delta", [1e-9, 0.1, 7.3])
def test_pinvar_slider_at_its_bounds(start, delta):
    s = seed_states(14, [(0,)])[0]
    for _ in range(DRAWS):
        x = np.array([start])
        assert pm.pinvar_slider(s, x, delta) == 0.0
        assert 0.0 <= x[0] <= pm.PINVAR_MAX
