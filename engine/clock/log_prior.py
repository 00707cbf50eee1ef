"""The clock part of MrBayes 3.2.7a's LogPrior for one clock tree: the tree prior of the ClockModel (with
its treeagepr term, dropped when the root is calibrated), the calibration densities of the dated nodes,
the clock-rate prior, the tree-prior parameters' priors (net_speciation, relative_extinction,
relative_fossilization, popsize) and the relaxed clock (igr / tk02 / cpp with their hyperpriors).

`ln_prior(model, state, values)` reads a `mbgpu.clock.start_tree.ClockStart` and the parameter values
(column label -> value, as `ClockModel.starts()` gives them; None there marks MrBayes' random draws, which
the caller must supply). The formulas are the kernels of mbgpu.clock (docs/plans/clocks.md §1-§3).
"""
from __future__ import annotations

import numpy as np

from mbgpu.clock import fossilized, relaxed
from mbgpu.clock import tree_priors as tp
from mbgpu.clock.distributions import FIXED
from mbgpu.clock.prior_table import _ln_scalar, scalar_code
from mbgpu.clock.rooted import root_of

STRATEGIES = {"random": tp.RANDOM, "diversity": tp.DIVERSITY, "cluster": tp.CLUSTER, "fossiltip": tp.FOSSILTIP}


def parameter_values(model, state, values=None) -> dict:
    """The values the prior is evaluated at: `values` over ClockModel.starts(), the clock rate being the
    start state's (MrBayes moves it into the calibrations' range).

    Raises:
        ValueError: a start value MrBayes draws at random (None in starts()) that `values` lacks.
    """
    out = dict(model.starts())
    out["clockrate"] = state.clock_rate
    out.update(values or {})
    missing = [k for k, v in out.items() if v is None]
    if missing:
        raise ValueError("MrBayes draws %s at random: pass its value" % ", ".join(missing))
    return out


def ln_prior(model, state, values=None) -> float:
    """MrBayes' Gen-0 LnPr of the clock terms of one tree (the substitution model's priors are not here)."""
    v = parameter_values(model, state, values)
    return (ln_tree_prior(model, state, v) + ln_calibrations(state, v["clockrate"])
            + ln_clock_rate_prior(model, v["clockrate"]) + ln_tree_parameter_priors(model, v)
            + ln_relaxed_clock(model, state, v))


def _age_prior(model) -> tuple[int, np.ndarray]:
    dist = model.tree_age
    return dist.kind, np.array(tuple(dist.params) + (0.0,) * (3 - len(dist.params)))


def ln_tree_prior(model, state, v: dict) -> float:
    """The tree prior (uniform, birth-death, coalescent, fossilized birth-death) with treeagepr's term
    unless the root is calibrated."""
    parent, depth, n, rate = state.parent, state.depth, state.n_tips, v["clockrate"]
    age_kind, age_p = _age_prior(model)
    root_dated = bool(state.dated[root_of(parent)])
    if model.tree_prior == "uniform":
        return tp.ln_uniform(parent, depth, n, rate, age_kind, age_p, state.dated, state.locked)
    if model.tree_prior == "coalescence":
        theta = model.ploidy_factor * v["popsize"] * rate
        return tp.ln_coalescent(parent, depth, n, theta, model.growth)
    strategy = STRATEGIES[model.sample_strat]
    if model.tree_prior == "birthdeath":
        return tp.ln_birth_death(parent, depth, n, rate, v["net_speciation"], v["relative_extinction"],
                                 model.sample_prob, strategy, age_kind, age_p, root_dated)
    return fossilized.ln_fossilized_bd(parent, depth, n, rate, v["net_speciation"], v["relative_extinction"],
                                       _fossilization(model, v), model.sample_prob, strategy, age_kind, age_p,
                                       root_dated, np.array(model.shift_times, dtype=np.float64))


def _fossilization(model, v: dict) -> np.ndarray:
    """relative_fossilization per fossil-sampling interval, oldest first (one value repeated when a single
    start value is given)."""
    value = np.atleast_1d(np.asarray(v["relative_fossilization"], dtype=np.float64))
    n = len(model.shift_times) + 1
    return np.full(n, value[0]) if value.shape[0] == 1 else value


def ln_calibrations(state, clock_rate: float) -> float:
    """Σ over dated nodes of their calibration density at age = depth / clock rate (fixed ones add 0)."""
    return tp.ln_calibrations(state.depth / clock_rate, state.cal_kind, state.cal_params)


def ln_clock_rate_prior(model, clock_rate: float) -> float:
    """clockratepr's density (0 for a fixed clock rate)."""
    return 0.0 if model.clock_rate.kind == FIXED else model.clock_rate.ln_pdf(clock_rate)


def ln_scalar_prior(prior, x: float) -> float:
    """A ScalarPrior's log density at x as MrBayes' LogPrior computes it: Exponential(rate),
    Uniform(min, max), Beta(a, b), Lognormal, Normal (truncated at 0), Gamma(shape, rate), Fixed (0); the
    compiled prior_table._ln_scalar is the one home of the formulas.

    Raises:
        NotImplementedYet: a family whose parameterization was not checked against MrBayes here.
    """
    return _ln_scalar(*scalar_code(prior), x)


def ln_tree_parameter_priors(model, v: dict) -> float:
    """net_speciation and relative_extinction (birth-death, FBD), relative_fossilization (FBD, each
    interval), popsize (coalescent)."""
    total = 0.0
    if model.tree_prior in ("birthdeath", "fossilization"):
        total += ln_scalar_prior(model.speciation, v["net_speciation"])
        total += ln_scalar_prior(model.extinction, v["relative_extinction"])
    if model.tree_prior == "fossilization":
        total += sum(ln_scalar_prior(model.fossilization, x) for x in _fossilization(model, v))
    if model.tree_prior == "coalescence":
        total += ln_scalar_prior(model.popsize, v["popsize"])
    return total


def ln_relaxed_clock(model, state, v: dict) -> float:
    """igr / tk02: the variance's prior + the branch (node) rates' density (rates from `v['rates']`, MrBayes'
    start value 1); cpp: cppRate's prior + the events' density (`v['cpp_events']`, `v['cpp_multipliers']`;
    MrBayes starts with none)."""
    n = state.parent.shape[0]
    if model.clock_var == "igr":
        rates = np.asarray(v.get("rates", np.ones(n)), dtype=np.float64)
        return ln_scalar_prior(model.igrvar, v["igrvar"]) + relaxed.ln_igr_rates(state.parent, state.depth, rates,
                                                                                 v["igrvar"])
    if model.clock_var == "tk02":
        rates = np.asarray(v.get("rates", np.ones(n)), dtype=np.float64)
        return ln_scalar_prior(model.tk02var, v["tk02var"]) + relaxed.ln_tk02_rates(state.parent, state.depth, rates,
                                                                                    v["tk02var"])
    if model.clock_var == "cpp":
        events = np.asarray(v.get("cpp_events", np.zeros(n, dtype=np.int64)), dtype=np.int64)
        mults = np.asarray(v.get("cpp_multipliers", np.ones((n, 1))), dtype=np.float64)
        return ln_scalar_prior(model.cpprate, v["cppRate"]) + relaxed.ln_cpp_events(
            state.parent, state.depth, events, mults, v["cppRate"], model.cppmultdev)
    return 0.0
