"""Small Metropolis-Hastings samplers of the relaxed-clock priors on a fixed tree, built from the moves of
mbgpu.clock.relaxed_moves / cpp_moves with MrBayes' relative weights, compiled with numba (every kernel is
rebuilt over a copy of its module's globals in which the kernels it calls are numba dispatchers, as
test_numba.py does), plus the tree and the statistics the tests compare."""
from __future__ import annotations

import importlib
import math
import types

import numba
import numpy as np

from mbgpu.clock.cpp_moves import (WEIGHT_ADD_DELETE, WEIGHT_DRAW_MULTIPLIER, WEIGHT_DRAW_POSITION,
                                   move_cpp_add_delete, move_cpp_multiplier, move_cpp_position, move_cpp_rate)
from mbgpu.clock.relaxed import ln_cpp_events, ln_igr_rates, ln_tk02_rates
from mbgpu.clock.relaxed_lengths import branch_lengths_of, cpp_after_tree_change
from mbgpu.clock.limits import IGRVAR_MAX, IGRVAR_MIN, TK02VAR_MAX, TK02VAR_MIN
from mbgpu.clock.relaxed_moves import (WEIGHT_IGR_BRLENS, WEIGHT_TK02_BRLENS, move_igr_branch_rate, move_igrvar,
                                       move_tk02_branch_rate, move_tk02var)
from mbgpu.clock.rooted import children
from mbgpu.core import rng

# ((A:0.1,B:0.1):0.3,(C:0.25,(D:0.07,E:0.07):0.18):0.15): tips A..E = 0..4, AB 5, DE 6, CDE 7, root 8
NEWICK = "((A:0.1,B:0.1):0.3,(C:0.25,(D:0.07,E:0.07):0.18):0.15);"
PARENT = np.array([5, 5, 7, 6, 6, 8, 7, 8, -1], dtype=np.int64)
DEPTH = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.1, 0.07, 0.25, 0.4])
KIDS = children(PARENT)
LENGTH = np.array([0.1, 0.1, 0.25, 0.07, 0.07, 0.3, 0.18, 0.15, 0.0])

KERNELS = {
    "special": ["ln_gamma"],
    "distributions": ["ln_gamma_pdf", "ln_lognormal_pdf"],
    "rooted": ["root_of", "branch_lengths"],
    "relaxed": ["ln_tk02_lognormal", "ln_igr_rates", "ln_tk02_rates", "ln_cpp_events"],
    "relaxed_moves": ["multiply", "move_igrvar", "move_tk02var", "pick_timed_branch",
                      "_in_bounds", "move_igr_branch_rate", "move_tk02_branch_rate"],
    "relaxed_lengths": ["branch_lengths_of", "igr_effective_lengths", "tk02_effective_lengths", "cpp_branch_factor",
                        "cpp_effective_lengths", "lengths_in_bounds", "igr_after_tree_change",
                        "tk02_after_tree_change", "cpp_length_jacobian", "cpp_after_tree_change", "cpp_merge",
                        "cpp_split"],
    "cpp_moves": ["move_cpp_rate", "_lognormal_draw", "move_cpp_add_delete", "pick_event", "move_cpp_position",
                  "move_cpp_multiplier"],
}


def jit_kernels() -> dict:
    """{name: numba dispatcher} of every kernel of KERNELS and of the chains below, calling each other
    compiled (nopython)."""
    out = {}
    for mod, names in KERNELS.items():
        module = importlib.import_module("mbgpu.clock." + mod)
        out.update({name: getattr(module, name) for name in names})     # the module's own dispatchers
    mine = dict(globals())
    for name in ("igr_chain", "tk02_chain", "cpp_chain", "slider_cpp_chain", "_accept"):
        out[name] = numba.njit(types.FunctionType(globals()[name].__code__, mine, name))
    mine.update(out)
    return out


def _accept(s, ln_ratio: float) -> bool:
    """Metropolis-Hastings acceptance of a log ratio (-inf: an aborted proposal)."""
    return ln_ratio > -math.inf and math.log(rng.uniform(s)) < ln_ratio


def igr_chain(s, parent, depth, rates, eff, var, prior_rate, w_var, tunings, n_gen, thin, out_var, out_eff):
    """IGR rates with igrvar ~ Exponential(prior_rate) (w_var = 0: igrvar fixed); records igrvar and the
    effective lengths every `thin` generations."""
    cur = ln_igr_rates(parent, depth, rates, var) - prior_rate * var
    keep_r, keep_e = rates.copy(), eff.copy()
    for g in range(n_gen):
        if rng.uniform(s) * (w_var + WEIGHT_IGR_BRLENS) < w_var:
            new_var, ln_q = move_igrvar(s, var, tunings[0], IGRVAR_MIN, IGRVAR_MAX)
            new = ln_igr_rates(parent, depth, rates, new_var) - prior_rate * new_var
            if _accept(s, new - cur + ln_q):
                var, cur = new_var, new
        else:
            ln_q = move_igr_branch_rate(s, parent, depth, rates, eff, tunings[1])
            new = ln_igr_rates(parent, depth, rates, var) - prior_rate * var
            if _accept(s, new - cur + ln_q):
                keep_r[:], keep_e[:], cur = rates, eff, new
            else:
                rates[:], eff[:] = keep_r, keep_e
        if (g + 1) % thin == 0:
            out_var[(g + 1) // thin - 1] = var
            out_eff[(g + 1) // thin - 1, :] = eff


def tk02_chain(s, parent, kids, depth, rates, eff, nu, prior_rate, w_var, tunings, n_gen, thin, out_var, out_eff):
    """TK02 node rates with tk02var ~ Exponential(prior_rate) (w_var = 0: fixed); records as igr_chain."""
    cur = ln_tk02_rates(parent, depth, rates, nu) - prior_rate * nu
    keep_r, keep_e = rates.copy(), eff.copy()
    for g in range(n_gen):
        if rng.uniform(s) * (w_var + WEIGHT_TK02_BRLENS) < w_var:
            new_nu, ln_q = move_tk02var(s, nu, tunings[0], TK02VAR_MIN, TK02VAR_MAX)
            new = ln_tk02_rates(parent, depth, rates, new_nu) - prior_rate * new_nu
            if _accept(s, new - cur + ln_q):
                nu, cur = new_nu, new
        else:
            ln_q = move_tk02_branch_rate(s, parent, kids, depth, rates, eff, tunings[1])
            new = ln_tk02_rates(parent, depth, rates, nu) - prior_rate * nu
            if _accept(s, new - cur + ln_q):
                keep_r[:], keep_e[:], cur = rates, eff, new
            else:
                rates[:], eff[:] = keep_r, keep_e
        if (g + 1) % thin == 0:
            out_var[(g + 1) // thin - 1] = nu
            out_eff[(g + 1) // thin - 1, :] = eff


def cpp_chain(s, parent, kids, depth, state, lam, sigma, prior_rate, w_rate, tuning, n_gen, thin,
              out_lam, out_events, out_eff, out_mult):
    """CPP events with cppRate ~ Exponential(prior_rate) (w_rate = 0: fixed); state = (n_events, positions,
    multipliers, eff); records cppRate, the event counts, the effective lengths and the first multiplier
    of the first branch with events (0 when there is none)."""
    n_events, positions, multipliers, eff = state
    cur = ln_cpp_events(parent, depth, n_events, multipliers, lam, sigma) - prior_rate * lam
    keep = (n_events.copy(), positions.copy(), multipliers.copy(), eff.copy())
    total = w_rate + WEIGHT_ADD_DELETE + WEIGHT_DRAW_POSITION + WEIGHT_DRAW_MULTIPLIER
    for g in range(n_gen):
        u = rng.uniform(s) * total
        if u < w_rate:
            new_lam, ln_q = move_cpp_rate(s, lam, tuning)
            new = ln_cpp_events(parent, depth, n_events, multipliers, new_lam, sigma) - prior_rate * new_lam
            if _accept(s, new - cur + ln_q):
                lam, cur = new_lam, new
        else:
            if u < w_rate + WEIGHT_ADD_DELETE:
                ln_q = move_cpp_add_delete(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma)
            elif u < w_rate + WEIGHT_ADD_DELETE + WEIGHT_DRAW_POSITION:
                ln_q = move_cpp_position(s, parent, kids, depth, n_events, positions, multipliers, eff)
            else:
                ln_q = move_cpp_multiplier(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma)
            new = ln_cpp_events(parent, depth, n_events, multipliers, lam, sigma) - prior_rate * lam
            if _accept(s, new - cur + ln_q):
                keep[0][:], keep[1][:], keep[2][:], keep[3][:], cur = n_events, positions, multipliers, eff, new
            else:
                n_events[:], positions[:], multipliers[:], eff[:] = keep
        if (g + 1) % thin == 0:
            k = (g + 1) // thin - 1
            out_lam[k] = lam
            out_events[k, :] = n_events
            out_eff[k, :] = eff
            out_mult[k] = 0.0
            for v in range(n_events.shape[0]):
                if n_events[v] > 0:
                    out_mult[k] = multipliers[v, 0]
                    break


def slider_cpp_chain(s, parent, kids, depth, state, lam, sigma, window, n_gen, thin, out_depth, out_events):
    """Node CDE's depth (a flat prior between its older child DE and the root, as a node slider with
    reflection) together with the CPP events (cppRate fixed): the depth move adds cpp_after_tree_change's
    term for the three branches it changes; records the depth and the event counts."""
    n_events, positions, multipliers, eff = state
    changed = np.array([2, 6, 7])
    lo, hi = depth[6], depth[8]
    cur = ln_cpp_events(parent, depth, n_events, multipliers, lam, sigma)
    keep = (n_events.copy(), positions.copy(), multipliers.copy(), eff.copy())
    total = 1.0 + WEIGHT_ADD_DELETE + WEIGHT_DRAW_POSITION + WEIGHT_DRAW_MULTIPLIER
    old_length = np.zeros(parent.shape[0])
    for g in range(n_gen):
        u = rng.uniform(s) * total
        if u < 1.0:
            old_depth = depth[7]
            branch_lengths_of(parent, depth, old_length)
            d = old_depth + (rng.uniform(s) - 0.5) * window
            while d < lo or d > hi:
                d = 2.0 * lo - d if d < lo else 2.0 * hi - d
            depth[7] = d
            ln_q = cpp_after_tree_change(old_length, parent, kids, depth, n_events, positions, multipliers, eff,
                                         changed)
        elif u < 1.0 + WEIGHT_ADD_DELETE:
            ln_q = move_cpp_add_delete(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma)
        elif u < 1.0 + WEIGHT_ADD_DELETE + WEIGHT_DRAW_POSITION:
            ln_q = move_cpp_position(s, parent, kids, depth, n_events, positions, multipliers, eff)
        else:
            ln_q = move_cpp_multiplier(s, parent, kids, depth, n_events, positions, multipliers, eff, sigma)
        new = ln_cpp_events(parent, depth, n_events, multipliers, lam, sigma)
        if _accept(s, new - cur + ln_q):
            keep[0][:], keep[1][:], keep[2][:], keep[3][:], cur = n_events, positions, multipliers, eff, new
        else:
            n_events[:], positions[:], multipliers[:], eff[:] = keep
            if u < 1.0:
                depth[7] = old_depth
        if (g + 1) % thin == 0:
            out_depth[(g + 1) // thin - 1] = depth[7]
            out_events[(g + 1) // thin - 1, :] = n_events


def ess(x: np.ndarray) -> float:
    """Effective sample size of a chain of draws (autocorrelations summed up to the first negative one)."""
    x = np.asarray(x, dtype=float) - np.mean(x)
    n = x.size
    if not x.any():
        return float(n)
    acf = np.correlate(x, x, "full")[n - 1:] / (x @ x)
    tau = 1.0
    for k in range(1, n // 2):
        if acf[k] < 0.0:
            break
        tau += 2.0 * acf[k]
    return n / tau


def ks_ok(a: np.ndarray, cdf_or_b, level: float = 1.95) -> tuple:
    """(passes, D, bound): Kolmogorov-Smirnov distance of draws `a` from a cdf (callable) or from other
    draws, against level/sqrt(effective n) (level 1.95 ~ a 0.1 % test for independent draws)."""
    na = ess(a)
    a = np.sort(np.asarray(a, dtype=float))
    if callable(cdf_or_b):
        f = cdf_or_b(a)
        i = np.arange(1, a.size + 1)
        d = max(np.max(i / a.size - f), np.max(f - (i - 1) / a.size))
        bound = level / math.sqrt(na)
    else:
        nb = ess(cdf_or_b)
        b = np.sort(np.asarray(cdf_or_b, dtype=float))
        grid = np.concatenate([a, b])
        d = np.max(np.abs(np.searchsorted(a, grid, "right") / a.size - np.searchsorted(b, grid, "right") / b.size))
        bound = level * math.sqrt((na + nb) / (na * nb))
    return d < bound, d, bound
