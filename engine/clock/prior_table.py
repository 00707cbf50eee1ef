"""The clock terms of LnPr (mbgpu.clock.log_prior.ln_prior) as one compiled function of arrays, for the
compiled core: the ClockModel becomes two number vectors (`prior_table`), a tree's scalar parameters one
float64 vector (`pack_params`), and `ln_clock_prior` adds the same kernels' terms in ln_prior's order.

Packing of the parameters (PARAMS at slots 0..4, then relative_fossilization's s+1 values from slot 5, s =
len(model.shift_times)); parameters a model lacks hold 0.0. The shift times are not in the table: they go
to ln_clock_prior as their own array (`shift_array(model)`), as fossilized.ln_fossilized_bd takes them.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock import fossilized, relaxed
from mbgpu.clock import tree_priors as tp
from mbgpu.clock.distributions import EXPONENTIAL, FIXED, NORMAL_POSITIVE, UNIFORM, ln_density, ln_gamma_pdf
from mbgpu.clock.distributions import ln_lognormal_pdf
from mbgpu.clock.rooted import root_of
from mbgpu.clock.special import ln_gamma
from mbgpu.errors import NotImplementedYet
from mbgpu.jit import JIT_OPTIONS

PARAMS = ("net_speciation", "relative_extinction", "popsize", "igrvar", "tk02var", "cppRate")
P_NET, P_EXT, P_POP, P_IGR, P_TK02, P_CPP = range(len(PARAMS))
FOSSILIZATION = len(PARAMS)                    # relative_fossilization's first slot

TREE_PRIORS = {"uniform": 0, "birthdeath": 1, "coalescence": 2, "fossilization": 3}
STRATEGIES = {"random": tp.RANDOM, "diversity": tp.DIVERSITY, "cluster": tp.CLUSTER, "fossiltip": tp.FOSSILTIP}
CLOCK_VARS = {"strict": 0, "igr": 1, "tk02": 2, "cpp": 3}
# ScalarPrior families (log_prior.ln_scalar_prior); Fixed adds 0 whatever the value
SCALAR_FAMILIES = {"Fixed": 0, "Exponential": 1, "Uniform": 2, "Beta": 3, "Lognormal": 4, "Normal": 5, "Gamma": 6}
SCALAR_PRIORS = ("speciation", "extinction", "fossilization", "popsize", "igrvar", "tk02var", "cpprate")

# kinds[...]: tree prior, samplestrat, treeagepr's kind, clockratepr's kind, clock_var, then one family code
# per SCALAR_PRIORS entry
K_TREE, K_STRAT, K_AGE, K_RATE, K_CLOCKVAR, K_SCALAR = 0, 1, 2, 3, 4, 5
N_KINDS = K_SCALAR + len(SCALAR_PRIORS)
# args[...]: sampleprob, treeagepr (3), ploidy factor, growth, clockratepr (3), cppmultdev, then (p0, p1) per
# scalar prior
A_SAMPLE_PROB, A_AGE, A_PLOIDY, A_GROWTH, A_RATE, A_CPP_SIGMA, A_SCALAR = 0, 1, 4, 5, 6, 9, 10
N_ARGS = A_SCALAR + 2 * len(SCALAR_PRIORS)
UNIFORM_TREE, BIRTHDEATH, COALESCENCE, FOSSILIZATION_TREE = 0, 1, 2, 3
STRICT, IGR, TK02, CPP = 0, 1, 2, 3
SPECIATION, EXTINCTION, FOSSIL_PRIOR, POPSIZE, IGRVAR, TK02VAR, CPPRATE = range(len(SCALAR_PRIORS))


def n_params(model) -> int:
    """Length of a packed parameter vector: PARAMS and relative_fossilization's s+1 values."""
    return FOSSILIZATION + len(model.shift_times) + 1


def pack_params(model, params: dict) -> np.ndarray:
    """The parameter dict (label -> float64 array, as ClockTree.params holds it) as one vector; absent
    labels give 0.0, one relative_fossilization value fills every interval (as log_prior does).

    Raises:
        ValueError: relative_fossilization with neither 1 nor s+1 values.
    """
    out = np.zeros(n_params(model))
    for i, label in enumerate(PARAMS):
        if label in params:
            out[i] = np.atleast_1d(params[label])[0]
    if "relative_fossilization" in params:
        values = np.atleast_1d(np.asarray(params["relative_fossilization"], dtype=np.float64))
        if values.shape[0] not in (1, out.shape[0] - FOSSILIZATION):
            raise ValueError("relative_fossilization has %d values, not %d" % (values.shape[0],
                                                                               out.shape[0] - FOSSILIZATION))
        out[FOSSILIZATION:] = values
    return out


def param_labels(model) -> list[str]:
    """The parameter labels the model has (start_params' keys: ClockModel.starts() less the clock rate)."""
    return [k for k in model.starts() if k != "clockrate"]


def unpack_params(model, vec: np.ndarray) -> dict:
    """The dict of `pack_params`'s vector, with only the model's labels (arrays of shape (1,), s+1 for
    relative_fossilization), as chain_tree.start_params gives them."""
    out = {}
    for label in param_labels(model):
        if label == "relative_fossilization":
            out[label] = np.array(vec[FOSSILIZATION:], dtype=np.float64)
        elif label in PARAMS:
            out[label] = np.array([vec[PARAMS.index(label)]], dtype=np.float64)
        else:
            raise NotImplementedYet("the clock parameter %s in the compiled prior is not supported yet" % label)
    return out


def scalar_code(prior) -> tuple[int, float, float]:
    """(family code, p0, p1) of a ScalarPrior.

    Raises:
        NotImplementedYet: a family log_prior.ln_scalar_prior refuses.
    """
    if prior.family not in SCALAR_FAMILIES:
        raise NotImplementedYet("the %s prior of a clock parameter in the log prior is not supported yet"
                                % prior.family)
    p = tuple(float(x) for x in prior.params) + (0.0, 0.0)
    return SCALAR_FAMILIES[prior.family], p[0], p[1]


def _padded(dist) -> tuple:
    return tuple(float(x) for x in dist.params) + (0.0,) * (3 - len(dist.params))


def prior_table(model) -> tuple[np.ndarray, np.ndarray]:
    """(kinds int64[N_KINDS], args float64[N_ARGS]): the numbers of the ClockModel that ln_clock_prior
    reads (slots K_* and A_* above).

    Raises:
        NotImplementedYet: a clock variance model or a scalar prior's family that ln_prior refuses.
    """
    if model.clock_var not in CLOCK_VARS:
        raise NotImplementedYet("clockvarpr=%s in the compiled clock prior is not supported yet" % model.clock_var)
    kinds, args = np.zeros(N_KINDS, dtype=np.int64), np.zeros(N_ARGS)
    kinds[K_TREE] = TREE_PRIORS[model.tree_prior]
    kinds[K_STRAT] = STRATEGIES.get(model.sample_strat, tp.RANDOM)
    kinds[K_AGE], kinds[K_RATE] = model.tree_age.kind, model.clock_rate.kind
    kinds[K_CLOCKVAR] = CLOCK_VARS[model.clock_var]
    args[A_SAMPLE_PROB], args[A_PLOIDY], args[A_GROWTH] = model.sample_prob, model.ploidy_factor, model.growth
    args[A_AGE:A_AGE + 3], args[A_RATE:A_RATE + 3] = _padded(model.tree_age), _padded(model.clock_rate)
    args[A_CPP_SIGMA] = model.cppmultdev
    for name in _used_priors(model):
        i = SCALAR_PRIORS.index(name)
        kinds[K_SCALAR + i], args[A_SCALAR + 2 * i], args[A_SCALAR + 2 * i + 1] = scalar_code(getattr(model, name))
    return kinds, args


def _used_priors(model) -> list[str]:
    """The scalar priors ln_prior reads for this model (the others stay Fixed, code 0, in the table)."""
    used = {"birthdeath": ["speciation", "extinction"], "fossilization": ["speciation", "extinction", "fossilization"],
            "coalescence": ["popsize"]}.get(model.tree_prior, [])
    return used + {"igr": ["igrvar"], "tk02": ["tk02var"], "cpp": ["cpprate"]}.get(model.clock_var, [])


def shift_array(model) -> np.ndarray:
    """The fossil-sampling shift times (decreasing, time units), ln_clock_prior's `shift_times`."""
    return np.array(model.shift_times, dtype=np.float64)


@numba.njit(**JIT_OPTIONS)
def _ln_scalar(family: int, p0: float, p1: float, x: float) -> float:
    """A ScalarPrior's log density at x as MrBayes' LogPrior computes it (SCALAR_FAMILIES codes): Fixed 0,
    Exponential(rate), Uniform(min, max), Beta(a, b), Lognormal(mu, sigma of log x), Normal truncated at 0
    (as clockratepr's normal), Gamma(shape, rate)."""
    if family == 0:
        return 0.0
    if family == 1:
        return ln_density(EXPONENTIAL, p0, 0.0, 0.0, x)
    if family == 2:
        return ln_density(UNIFORM, p0, p1, 0.0, x)
    if family == 3:
        return (ln_gamma(p0 + p1) - ln_gamma(p0) - ln_gamma(p1)
                + (p0 - 1.0) * math.log(x) + (p1 - 1.0) * math.log(1.0 - x))
    if family == 4:
        return ln_lognormal_pdf(p0, p1, x)
    if family == 5:
        return ln_density(NORMAL_POSITIVE, p0, p1, 0.0, x)
    if family == 6:
        return ln_gamma_pdf(p0, p1, x)
    raise ValueError("unknown scalar prior family")


@numba.njit(**JIT_OPTIONS)
def _scalar_term(kinds, args, which: int, x: float) -> float:
    """The log density of scalar prior `which` (SPECIATION ... TK02VAR) at x."""
    return _ln_scalar(kinds[K_SCALAR + which], args[A_SCALAR + 2 * which], args[A_SCALAR + 2 * which + 1], x)


@numba.njit(**JIT_OPTIONS)
def _ln_tree_prior(kinds, args, shift_times, parent, depth, n_tips, rate, params, dated, locked) -> float:
    """log_prior.ln_tree_prior: the tree prior of kinds[K_TREE], treeagepr's term unless the root is dated."""
    age_kind = kinds[K_AGE]
    age_p = args[A_AGE:A_AGE + 3].copy()
    tree = kinds[K_TREE]
    if tree == UNIFORM_TREE:
        return tp.ln_uniform(parent, depth, n_tips, rate, age_kind, age_p, dated, locked)
    if tree == COALESCENCE:
        theta = args[A_PLOIDY] * params[P_POP] * rate
        return tp.ln_coalescent(parent, depth, n_tips, theta, args[A_GROWTH])
    root_dated = dated[root_of(parent)]
    if tree == BIRTHDEATH:
        return tp.ln_birth_death(parent, depth, n_tips, rate, params[P_NET], params[P_EXT],
                                 args[A_SAMPLE_PROB], kinds[K_STRAT], age_kind, age_p, root_dated)
    return fossilized.ln_fossilized_bd(parent, depth, n_tips, rate, params[P_NET], params[P_EXT],
                                       params[FOSSILIZATION:].copy(), args[A_SAMPLE_PROB], kinds[K_STRAT],
                                       age_kind, age_p, root_dated, shift_times)


@numba.njit(**JIT_OPTIONS)
def ln_tree_parameter_priors(kinds, args, params) -> float:
    """net_speciation and relative_extinction (birth-death, FBD), relative_fossilization (FBD, each
    interval; summed apart first as log_prior's sum()), popsize (coalescent)."""
    tree = kinds[K_TREE]
    total = 0.0
    if tree == BIRTHDEATH or tree == FOSSILIZATION_TREE:
        total += _scalar_term(kinds, args, SPECIATION, params[P_NET])
        total += _scalar_term(kinds, args, EXTINCTION, params[P_EXT])
    if tree == FOSSILIZATION_TREE:
        fossils = 0.0
        for i in range(FOSSILIZATION, params.shape[0]):
            fossils += _scalar_term(kinds, args, FOSSIL_PRIOR, params[i])
        total += fossils
    if tree == COALESCENCE:
        total += _scalar_term(kinds, args, POPSIZE, params[P_POP])
    return total


@numba.njit(**JIT_OPTIONS)
def _ln_relaxed(kinds, args, parent, depth, params, rates, n_events, multipliers) -> float:
    """log_prior.ln_relaxed_clock: igr / tk02, the variance's prior + the rates' density; cpp, cppRate's prior
    + the events' density; 0 if strict."""
    if kinds[K_CLOCKVAR] == IGR:
        var = params[P_IGR]
        return _scalar_term(kinds, args, IGRVAR, var) + relaxed.ln_igr_rates(parent, depth, rates, var)
    if kinds[K_CLOCKVAR] == TK02:
        var = params[P_TK02]
        return _scalar_term(kinds, args, TK02VAR, var) + relaxed.ln_tk02_rates(parent, depth, rates, var)
    if kinds[K_CLOCKVAR] == CPP:
        lam = params[P_CPP]
        return _scalar_term(kinds, args, CPPRATE, lam) + relaxed.ln_cpp_events(parent, depth, n_events, multipliers,
                                                                                lam, args[A_CPP_SIGMA])
    return 0.0


@numba.njit(**JIT_OPTIONS)
def ln_clock_prior(kinds, args, shift_times, parent, depth, n_tips, clock_rate, params, rates, n_events,
                   multipliers, cal_kind, cal_params, locked) -> float:
    """log_prior.ln_prior from arrays: tree prior (+ treeagepr unless the root is dated) + calibrations at
    depth / clock_rate + clockratepr + tree-parameter priors + relaxed clock, summed in that order.
    `params` as pack_params, `rates` the igr / tk02 rates by node (any float64[N] for a strict clock, unread),
    `n_events` / `multipliers` the CPP events (int64[N], float64[N, cap]; unread unless cpp),
    `cal_kind` -1 at undated nodes, `shift_times` as shift_array."""
    dated = cal_kind >= 0
    ln_p = _ln_tree_prior(kinds, args, shift_times, parent, depth, n_tips, clock_rate, params, dated, locked)
    ln_p += tp.ln_calibrations(depth / clock_rate, cal_kind, cal_params)
    if kinds[K_RATE] != FIXED:                     # ln_prior adds 0.0 there: the same sum
        ln_p += ln_density(kinds[K_RATE], args[A_RATE], args[A_RATE + 1], args[A_RATE + 2], clock_rate)
    ln_p += ln_tree_parameter_priors(kinds, args, params)
    return ln_p + _ln_relaxed(kinds, args, parent, depth, params, rates, n_events, multipliers)
