"""The compiled clock prior of arrays (mbgpu.clock.prior_table.ln_clock_prior) equals log_prior.ln_prior,
which test_log_prior checks against mb-double, exactly: over the Gen-0 cases of test_log_prior (every tree
prior and samplestrat, FBD with shift times, strict / igr / tk02, calibrated clades and tips, fixed and free
clock rates), at the start state and at states with other node depths, clock rate, tree-prior parameters
and relaxed rates. The ClockTrees are built as the sampler builds them (chain_tree), from the commands."""
from __future__ import annotations

import numpy as np
import pytest

from mbgpu.clock.chain_tree import ClockTree, frame_of, start_params
from mbgpu.clock.distributions import FIXED
from mbgpu.clock.model import clock_models
from mbgpu.clock.prior_table import (PARAMS, n_params, pack_params, prior_table, shift_array, unpack_params)
from mbgpu.clock.prior_table import ln_clock_prior
from mbgpu.clock.relaxed_state import RelaxedState
from mbgpu.clock.rooted import internal_postorder, root_of
from mbgpu.clock.start_tree import clock_start
from tests.test_clock.test_log_prior import CALIBRATED, STARTVALS, _settings
from tests.test_clock.test_log_prior import CASES as GEN0
from tests.test_clock.trees import T1, T2

# beyond test_log_prior's cases: relaxed clocks under other tree priors, free clock rates with FBD and igr
CASES = {**GEN0,
         "fbd_free_rate": ("prset brlenspr=clock:fossilization clockratepr=lognormal(-1,0.5) "
                           "fossilizationpr=beta(2,3);", T2),
         "bd_igr_free_rate": ("prset brlenspr=clock:birthdeath clockvarpr=igr clockratepr=exponential(2) "
                              "igrvarpr=exponential(5);", T1),
         "coal_tk02": ("prset brlenspr=clock:coalescence clockvarpr=tk02 popsizepr=gamma(2,4);", T1),
         "calibrated_igr_free_rate": (CALIBRATED + " clockvarpr=igr clockratepr=lognormal(0,1); calibrate "
                                      "apes=gamma(0.2,0.05);", T1)}
COMPILED = CASES
PRIOR_OF = {"net_speciation": "speciation", "relative_extinction": "extinction",
            "relative_fossilization": "fossilization", "popsize": "popsize", "igrvar": "igrvar", "tk02var": "tk02var",
            "cppRate": "cpprate"}
RANGE = {"net_speciation": (0.05, 1.5), "relative_extinction": (0.05, 0.95), "relative_fossilization": (0.05, 0.95),
         "popsize": (0.1, 2.0), "igrvar": (0.05, 1.0), "tk02var": (0.05, 2.0), "cppRate": (0.5, 5.0)}


def _start_tree(tmp_path, case: str) -> ClockTree:
    """The case's start ClockTree (the draws MrBayes makes at random: the uniform prior's midpoint)."""
    commands, newick = CASES[case]
    given = STARTVALS.search(commands)
    commands = STARTVALS.sub("", commands)
    s = _settings(tmp_path, commands, newick)
    (model,) = clock_models(s)
    state = clock_start(s, model, s.startvals["V"])
    drawn = {k: sum(getattr(model, PRIOR_OF[k]).params) / 2.0 for k, v in model.starts().items() if v is None}
    if given:
        drawn["relative_fossilization"] = tuple(float(x) for x in given.group(1).split(","))
    return ClockTree(frame_of(model, state), state, start_params(model, drawn))


def _other_state(tree: ClockTree, rng: np.random.Generator) -> ClockTree:
    """The tree with each internal node's height above its oldest child scaled by U(0.7, 1.3) (zero stays
    zero: sampled ancestors), a free clock rate x U(0.8, 1.25), free parameters drawn in RANGE, relaxed
    rates lognormal(0, 0.3) (1 at the root) and 0-3 CPP events per branch."""
    s, model = tree.state, tree.frame.model
    depth = s.depth.copy()
    for v in internal_postorder(s.parent, s.n_tips):
        kids = np.flatnonzero(s.parent == v)
        depth[v] = depth[kids].max() + (s.depth[v] - s.depth[kids].max()) * rng.uniform(0.7, 1.3)
    rate = s.clock_rate if model.clock_rate.kind == FIXED else s.clock_rate * rng.uniform(0.8, 1.25)
    params = {k: (v.copy() if getattr(model, PRIOR_OF[k]).fixed else rng.uniform(*RANGE[k], size=v.shape[0]))
              for k, v in tree.params.items()}
    relaxed = None
    if tree.relaxed is not None and tree.relaxed.kind == "cpp":
        n = depth.shape[0]
        events = rng.integers(0, 4, size=n)
        events[root_of(s.parent)] = 0
        positions = np.sort(rng.uniform(size=(n, 16)), axis=1)
        relaxed = RelaxedState("cpp", np.ones(n), events, positions, np.exp(rng.normal(0.0, 0.4, size=(n, 16))))
    elif tree.relaxed is not None:
        rates = np.exp(rng.normal(0.0, 0.3, size=depth.shape[0]))
        rates[root_of(s.parent)] = 1.0
        relaxed = RelaxedState(tree.relaxed.kind, rates)
    return tree.moved(s.parent, s.kids, depth, clock_rate=rate, params=params, relaxed=relaxed)


def _compiled(tree: ClockTree) -> float:
    """ln_clock_prior over the tree's arrays, as the core will call it."""
    model, s = tree.frame.model, tree.state
    kinds, args = prior_table(model)
    rates = np.ones(s.parent.shape[0]) if tree.relaxed is None else tree.relaxed.rates
    events, mults = _events(tree)
    return ln_clock_prior(kinds, args, shift_array(model), s.parent, s.depth, s.n_tips, s.clock_rate,
                          pack_params(model, tree.params), rates, events, mults, s.cal_kind, s.cal_params, s.locked)


def _events(tree: ClockTree) -> tuple[np.ndarray, np.ndarray]:
    """The tree's CPP events and multipliers (none when it has no compound Poisson clock)."""
    n = tree.state.parent.shape[0]
    if tree.relaxed is None or tree.relaxed.kind != "cpp":
        return np.zeros(n, dtype=np.int64), np.ones((n, 1))
    return tree.relaxed.n_events, tree.relaxed.multipliers


@pytest.mark.parametrize("case", list(COMPILED))
def test_compiled_clock_prior_equals_ln_prior(case, tmp_path):
    """== ln_prior (no tolerance: the same kernels, the same sums in the same order), at the start state and
    at three other states."""
    tree = _start_tree(tmp_path, case)
    rng = np.random.default_rng(sum(map(ord, case)))
    for i in range(4):
        state = tree if i == 0 else _other_state(tree, rng)
        want = state.ln_prior()
        assert np.isfinite(want), (case, i)
        assert _compiled(state) == want, (case, i, _compiled(state), want)


@pytest.mark.parametrize("case", ["fbd_shifts_per_interval", "igr", "tk02_exp", "coalescence_gamma",
                                  "birthdeath_priors", "uniform"])
def test_pack_unpack_round_trip(case, tmp_path):
    """unpack(pack(params)) gives ClockTree.params back (keys, shapes, values); pack(unpack(v)) gives v
    where v has zeros at the labels the model lacks."""
    tree = _start_tree(tmp_path, case)
    model = tree.frame.model
    params = _other_state(tree, np.random.default_rng(1)).params
    vec = pack_params(model, params)
    assert vec.shape == (n_params(model),) and vec.dtype == np.float64
    back = unpack_params(model, vec)
    assert back.keys() == params.keys()
    for k in params:
        assert back[k].shape == params[k].shape and np.array_equal(back[k], params[k])
    absent = [i for i, k in enumerate(PARAMS) if k not in params]
    assert np.all(vec[absent] == 0.0)
    assert np.array_equal(pack_params(model, unpack_params(model, vec)), vec)


def test_callable_from_compiled_code(tmp_path):
    """The core calls ln_clock_prior from its own compiled step: a compiled caller gets the same number."""
    numba = pytest.importorskip("numba")

    @numba.njit
    def caller(kinds, args, shifts, parent, depth, n_tips, rate, params, rates, cal_kind, cal_params, locked):
        return ln_clock_prior(kinds, args, shifts, parent, depth, n_tips, rate, params, rates,
                              np.zeros(parent.shape[0], dtype=np.int64), np.ones((parent.shape[0], 1)), cal_kind,
                              cal_params, locked)

    tree = _other_state(_start_tree(tmp_path, "fbd_shifts_per_interval"), np.random.default_rng(2))
    model, s = tree.frame.model, tree.state
    got = caller(*prior_table(model), shift_array(model), s.parent, s.depth, s.n_tips, s.clock_rate,
                 pack_params(model, tree.params), np.ones(s.parent.shape[0]), s.cal_kind, s.cal_params, s.locked)
    assert got == tree.ln_prior()
