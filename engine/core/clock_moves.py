"""Clock moves in the compiled core: a chain's proposal on its rooted rows (mbgpu.core.clock_rows), by the
kernels of mbgpu.clock, then what mbgpu.clock.chain_tree.ClockTree does for a moved tree: MrBayes' branch
lengths (only the branches whose ends moved get depth differences), the written child order, the CPP
events carried through a tree move (mbgpu.core.clock_cpp), the relaxed clock's effective lengths and
its bounds, the unrooted view the likelihood reads, and the clock terms of the log prior
(mbgpu.clock.prior_table.ln_clock_prior).

`propose_clock` is what mbgpu.core.step.propose_chain calls for a move of kind >= layout.FIRST_CLOCK; each
branch mirrors the move's class in mbgpu.clock.chain_moves / chain_relaxed_moves / chain_fbd_moves, with the
chain's own xoshiro stream `s` in place of the per-proposal stream of the interpreted chain.
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock import cpp_moves as cpp
from mbgpu.clock import param_moves as pm
from mbgpu.clock import relaxed_moves as rx
from mbgpu.clock import tree_moves as tm
from mbgpu.clock.fbd_moves import add_branch, del_branch
from mbgpu.clock.fossil_spr import ext_fossil_spr_clock
from mbgpu.clock.limits import RELBRLENS_MAX, RELBRLENS_MIN
from mbgpu.clock.pars_spr_clock import pars_spr_from, pick_pruned
from mbgpu.clock.prior_table import A_CPP_SIGMA, FOSSILIZATION, P_CPP, P_EXT, P_IGR, P_NET, P_POP, P_TK02
from mbgpu.clock.prior_table import ln_clock_prior
from mbgpu.clock.relaxed_lengths import CPP, effective_from_lengths
from mbgpu.clock.rooted import keep_written_order, moved_lengths, unrooted_view_into
from mbgpu.clock.topology_moves import nni_clock, pick_prunable, spr_from
from mbgpu.core import layout as L
from mbgpu.core.clock_cpp import carry_events
from mbgpu.core.trees import fill_kids
from mbgpu.jit import JIT_OPTIONS

STRICT = 0                             # ClockArgs.relaxed: this, or relaxed_lengths' IGR, TK02, CPP


@numba.njit(**JIT_OPTIONS)
def depth_bounds(c, ck, lo, hi):
    """ClockFrame.depth_bounds of chain c's proposal (at its clock rate) into lo, hi."""
    n_tips = (ck.parent.shape[1] + 1) // 2
    rate = ck.rate_p[c]
    root = -1
    for v in range(lo.shape[0]):
        lo[v], hi[v] = 0.0, 0.0 if v < n_tips else math.inf
        if ck.dated[c, v]:
            lo[v], hi[v] = ck.cal_min[c, v] * rate, ck.cal_max[c, v] * rate
        if ck.parent_p[c, v] < 0:
            root = v
    if not ck.dated[c, root] and ck.model[0] != 0.0:
        lo[root], hi[root] = ck.model[2] * rate, ck.model[3] * rate


@numba.njit(**JIT_OPTIONS)
def _copy_rows(c, ck):
    """Chain c's proposal rows = its current rows."""
    ck.parent_p[c, :] = ck.parent[c, :]
    ck.kids_p[c, :, :] = ck.kids[c, :, :]
    ck.depth_p[c, :] = ck.depth[c, :]
    ck.brlen_p[c, :] = ck.brlen[c, :]
    ck.written_p[c, :, :] = ck.written[c, :, :]
    ck.rate_p[c] = ck.rate[c]
    ck.params_p[c, :] = ck.params[c, :]
    ck.rates_p[c, :] = ck.rates[c, :]
    ck.eff_p[c, :] = ck.eff[c, :]
    ck.n_events_p[c, :] = ck.n_events[c, :]
    ck.positions_p[c, :, :] = ck.positions[c, :, :]
    ck.mults_p[c, :, :] = ck.mults[c, :, :]


@numba.njit(**JIT_OPTIONS)
def _tree_kernel(kind, c, s, tuning, ck, cpars):
    """A move of the rooted arrays (depth, topology, clock rate, FBD fossils, which also carry a relaxed
    rate: AddBranch); its log proposal ratio. An SPR move's pruned node goes to ck.picked[c]; cpars:
    ParsSPRClock's data (ClockRows.pars)."""
    parent, kids, depth, n_tips = ck.parent_p[c], ck.kids_p[c], ck.depth_p[c], (ck.parent.shape[1] + 1) // 2
    lo, hi, locked = ck.lo[c], ck.hi[c], ck.locked[c]
    depth_bounds(c, ck, lo, hi)
    if kind == L.CLOCK_NODESLIDER:
        return tm.node_slider_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tuning[0])
    if kind == L.CLOCK_STRETCH:
        return tm.tree_stretch(s, parent, kids, depth, n_tips, lo, hi, locked, tuning[0])
    if kind == L.CLOCK_EXTSPR:
        v = ck.picked[c] = pick_prunable(s, parent, kids, depth, n_tips, lo, hi, locked)
        return -math.inf if v < 0 else spr_from(s, v, parent, kids, depth, n_tips, lo, hi, locked, tuning[0])
    if kind == L.CLOCK_NNI:
        return nni_clock(s, parent, kids, depth, n_tips, lo, hi, locked, 0.0)
    if kind == L.CLOCK_PARSSPR:
        v = ck.picked[c] = pick_pruned(s, parent, kids, depth, locked)
        if v < 0:
            return -math.inf
        return pars_spr_from(s, v, parent, kids, depth, n_tips, lo, hi, locked, tuning[0], *cpars)
    if kind == L.CLOCK_FOSSILSPR:
        return ext_fossil_spr_clock(s, parent, kids, depth, n_tips, lo, hi, locked, tuning[0])
    if kind == L.CLOCK_RATE:
        return pm.clock_rate_multiplier(s, ck.rate_p[c:c + 1], parent, depth, tuning[0], ck.n_events_p[c])
    cal_kind, age = ck.cal_kind[c], ck.model
    if kind == L.CLOCK_ADDBRANCH:
        return add_branch(s, parent, kids, depth, n_tips, ck.rate_p[c], cal_kind, ck.cal_min[c], ck.cal_max[c],
                          int(age[1]), age[2], age[3], ck.rates_p[c])
    return del_branch(s, parent, kids, depth, n_tips, ck.rate_p[c], cal_kind, ck.cal_min[c], ck.cal_max[c],
                      int(age[1]), age[2], age[3], ck.rates_p[c])


@numba.njit(**JIT_OPTIONS)
def _param_kernel(kind, c, s, tuning, lo, hi, ck):
    """A move of a tree-prior parameter, a relaxed-clock rate or CPP events; its log proposal ratio."""
    x = ck.params_p[c]
    if kind == L.CLOCK_SPECIATION:
        return pm.speciation_multiplier(s, x[P_NET:P_NET + 1], tuning[0], lo, hi)
    if kind == L.CLOCK_EXTINCTION:
        return pm.extinction_slider(s, x[P_EXT:P_EXT + 1], tuning[0])
    if kind == L.CLOCK_POPSIZE:
        return pm.popsize_multiplier(s, x[P_POP:P_POP + 1], tuning[0], lo, hi)
    if kind == L.CLOCK_FOSSILIZATION:
        return pm.fossilization_slider(s, x[FOSSILIZATION:FOSSILIZATION + ck.n_fossil], tuning[0])
    if kind == L.CLOCK_IGRVAR:
        x[P_IGR], r = rx.move_igrvar(s, x[P_IGR], tuning[0], lo, hi)
        return r
    if kind == L.CLOCK_TK02VAR:
        x[P_TK02], r = rx.move_tk02var(s, x[P_TK02], tuning[0], lo, hi)
        return r
    if kind == L.CLOCK_CPPRATE:
        x[P_CPP], r = cpp.move_cpp_rate(s, x[P_CPP], tuning[0])
        return r
    eff = ck.lo[c]             # scratch: the kernels' own effective lengths (_effective computes the kept ones)
    eff[:] = ck.eff_p[c]
    parent, kids, depth = ck.parent_p[c], ck.kids_p[c], ck.depth_p[c]
    if kind == L.CLOCK_IGRRATE:
        return rx.move_igr_branch_rate(s, parent, depth, ck.rates_p[c], eff, tuning[0])
    if kind == L.CLOCK_TK02RATE:
        return rx.move_tk02_branch_rate(s, parent, kids, depth, ck.rates_p[c], eff, tuning[0])
    n_ev, pos, mult, sigma = ck.n_events_p[c], ck.positions_p[c], ck.mults_p[c], ck.prior_args[A_CPP_SIGMA]
    if kind == L.CLOCK_CPP_ADD_DELETE:
        return cpp.move_cpp_add_delete(s, parent, kids, depth, n_ev, pos, mult, eff, sigma)
    if kind == L.CLOCK_CPP_POSITION:
        return cpp.move_cpp_position(s, parent, kids, depth, n_ev, pos, mult, eff)
    return cpp.move_cpp_multiplier(s, parent, kids, depth, n_ev, pos, mult, eff, sigma)


@numba.njit(**JIT_OPTIONS)
def propose_clock(kind, c, s, tuning, lo, hi, ck, cpars, t_parent, t_kids, t_brlen, brl_p, t):
    """Chain c's clock move of `kind` (tuning row, reflection bounds lo/hi of a parameter move) on its
    proposal rows; the settled proposal's unrooted view into t_parent/t_kids/t_brlen (its tree rows) and
    its clock log prior into brl_p[c, t]. Returns the log proposal ratio (-inf: aborted)."""
    _copy_rows(c, ck)
    ck.live[c] = 1
    ck.picked[c] = -1
    if kind < L.CLOCK_IGRRATE:
        r = _tree_kernel(kind, c, s, tuning, ck, cpars)
    else:
        r = _param_kernel(kind, c, s, tuning, lo, hi, ck)
    if not r > -math.inf:
        return -math.inf
    if moved_lengths(ck.parent_p[c], ck.depth_p[c], ck.parent[c], ck.depth[c], ck.brlen_p[c]):
        keep_written_order(ck.written_p[c], ck.kids_p[c])
    if ck.relaxed == CPP and kind < L.CLOCK_FOSSILSPR:
        r += carry_events(c, ck, ck.picked[c])
        if not r > -math.inf:
            return -math.inf
    if not _effective(c, ck, kind <= L.CLOCK_RATE):
        return -math.inf
    unrooted_view(ck.parent_p[c], ck.eff_p[c], t_parent, t_kids, t_brlen)
    brl_p[c, t] = ln_clock_prior(ck.prior_kinds, ck.prior_args, ck.shift_times, ck.parent_p[c], ck.depth_p[c],
                                 t_parent.shape[0] // 2 + 1, ck.rate_p[c], ck.params_p[c], ck.rates_p[c],
                                 ck.n_events_p[c], ck.mults_p[c], ck.cal_kind[c], ck.cal_params[c], ck.locked[c])
    return r


@numba.njit(**JIT_OPTIONS)
def _effective(c, ck, check):
    """eff_p[c] from brlen_p: the lengths themselves for a strict clock, else relaxed_lengths'
    effective_from_lengths (as RelaxedState.effective_lengths); with `check` under igr / tk02, False when a
    positive-length branch's effective length is outside [RELBRLENS_MIN, RELBRLENS_MAX] (MrBayes checks no
    bound under cpp: UpdateCppEvolLength)."""
    parent, brlen, eff = ck.parent_p[c], ck.brlen_p[c], ck.eff_p[c]
    if ck.relaxed == STRICT:
        eff[:] = brlen
        return True
    effective_from_lengths(ck.relaxed, parent, ck.kids_p[c], brlen, ck.rates_p[c], ck.n_events_p[c],
                           ck.positions_p[c], ck.mults_p[c], eff)
    if not check or ck.relaxed == CPP:
        return True
    for v in range(parent.shape[0]):
        if parent[v] >= 0 and brlen[v] > 0.0 and not (RELBRLENS_MIN <= eff[v] <= RELBRLENS_MAX):
            return False
    return True


@numba.njit(**JIT_OPTIONS)
def unrooted_view(parent, eff, t_parent, t_kids, t_brlen):
    """mbgpu.clock.rooted.unrooted_view_into a core tree row, children sorted (trees.fill_kids)."""
    unrooted_view_into(parent, eff, t_parent, t_brlen)
    fill_kids(t_parent, t_kids)


@numba.njit(**JIT_OPTIONS)
def events_near_full(ck) -> bool:
    """Whether a compound Poisson clock's branch holds half its event row (ClockRows.grow_events then
    doubles the rows, before any add or ExtSPRClock merge could meet a full one)."""
    if ck.relaxed != CPP:
        return False
    cap = ck.positions.shape[2]
    for c in range(ck.n_events.shape[0]):
        for v in range(ck.n_events.shape[1]):
            if 2 * ck.n_events[c, v] >= cap:
                return True
    return False


@numba.njit(**JIT_OPTIONS)
def keep_clock(accepted, c0, c1, ck):
    """Chains c0..c1-1 whose clock proposal was accepted keep its rows."""
    for c in range(c0, c1):
        if ck.live[c] and accepted[c]:
            ck.parent[c, :] = ck.parent_p[c, :]
            ck.kids[c, :, :] = ck.kids_p[c, :, :]
            ck.depth[c, :] = ck.depth_p[c, :]
            ck.brlen[c, :] = ck.brlen_p[c, :]
            ck.written[c, :, :] = ck.written_p[c, :, :]
            ck.rate[c] = ck.rate_p[c]
            ck.params[c, :] = ck.params_p[c, :]
            ck.rates[c, :] = ck.rates_p[c, :]
            ck.eff[c, :] = ck.eff_p[c, :]
            ck.n_events[c, :] = ck.n_events_p[c, :]
            ck.positions[c, :, :] = ck.positions_p[c, :, :]
            ck.mults[c, :, :] = ck.mults_p[c, :, :]
        ck.live[c] = 0
