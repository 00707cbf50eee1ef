"""One generation of every chain, compiled: `propose_all` (a move per chain, into scratch copies of the
state), then the caller evaluates models and likelihoods, then `decide_all` (prior, Metropolis-Hastings
at each chain's heat, counters and autotuning as MrBayes).

State arrays (C chains of R trees each, N nodes, P parameter values), current and proposed (`_p`): tree
`parent`, `kids`, `brlen` (mbgpu.core.trees; chain c's tree t in row c R + t: R > 1 with `unlink
topology` or `unlink brlens`), `theta` (mbgpu.core.layout.ParamLayout); a clock tree's rows `ck` and
ParsSPRClock's data `cpars` (mbgpu.core.clock_rows). Per chain: `rng` (mbgpu.core.rng), `lnl`, `lnpr`,
`best`, the prior's branch-length term of each tree `brl[C, R]` (`brl_p`: a proposal's) and parameter
terms `pterm[C, K]`. Per move: `mtree[m]`, the tree a tree move acts on, `mrows[m, R]` the trees it
changes (MultNNI: every tree sharing a topology, mtree[m] the first); per pattern set: `div_tree[d]`,
the tree its likelihood lies on. Per proposal: `move_of[c]`, `log_h[c]` (-inf: aborted, nothing to
evaluate) and `moved[c]` (the parameter a parameter move changed, -1 for a tree move).
"""
from __future__ import annotations

import math

import numba

from mbgpu.core import layout as L
from mbgpu.core.branch_moves import autotune_multiplier_within, branch_multiplier, node_slider, tree_length_multiplier
from mbgpu.core.clock_moves import propose_clock
from mbgpu.core.param_moves import dirichlet_move, log_multiplier, pinvar_slider, simplex_slider, tune_param
from mbgpu.core.constraint_check import constraints_hold
from mbgpu.core.pars_spr import pars_spr
from mbgpu.core.prior import CLOCK, brlens_log_prior
from mbgpu.core.rng import pick, uniform
from mbgpu.core.tree_moves import ext_spr, ext_tbr, mult_nni, nni
from mbgpu.core.trees import sort_kids
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def _propose_param(kind, s, x, tuning, scale, lo, hi, alpha_factor):
    if kind == L.DIRICHLET:
        return dirichlet_move(s, x, tuning[0] * alpha_factor, scale)
    if kind == L.SLIDER:
        return simplex_slider(s, x, tuning[0], scale)
    if kind == L.MULTIPLIER:
        return log_multiplier(s, x, tuning[0], lo, hi)
    return pinvar_slider(s, x, tuning[0])


@numba.njit(**JIT_OPTIONS)
def _propose_tree(kind, parent, kids, brlen, n_tips, s, tuning, lo, hi, anchor, pars):
    if kind == L.EXT_SPR:
        return ext_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi)
    if kind == L.EXT_TBR:
        return ext_tbr(parent, kids, brlen, n_tips, s, tuning, lo, hi)
    if kind == L.NNI:
        return nni(parent, kids, brlen, n_tips, s)
    if kind == L.PARS_SPR:
        return pars_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi, anchor, *pars)
    if kind == L.BRANCH_MULTIPLIER:
        return branch_multiplier(parent, kids, brlen, n_tips, s, tuning[0], lo, hi)
    if kind == L.NODE_SLIDER:
        return node_slider(parent, kids, brlen, n_tips, s, tuning[0], lo, hi, anchor)
    return tree_length_multiplier(parent, kids, brlen, n_tips, s, tuning[0], lo, hi)


@numba.njit(**JIT_OPTIONS)
def propose_chain(c, rng, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, mkind, mparam, mtree,
                  mrows, cdf, bounds, scale, alpha_factor, tuning, off, n_tips, lo, hi, anchor, cons_kind, cons_a,
                  cons_b, cons_first, pars, move_of, log_h, moved, todo, div_tree):
    """Chain c: copy its state into the proposal arrays, pick a move by weight and propose; a tree proposal
    (on tree mtree[m], row c R + mtree[m]; ParsSPR with that tree's data, pars[mtree[m]]; MultNNI on the
    trees of mrows[m]) that breaks a constraint of its tree (`cons_*`, rows cons_first[t]:cons_first[t + 1]:
    mbgpu.core.constraint_check.per_tree) is
    rejected, a live one marks the pattern sets on the trees it changed (todo 1). lo[t], hi[t]: tree t's
    branch-length limits (its brlens prior). A clock move (kind >= FIRST_CLOCK) is only picked here:
    propose_all makes it (`clock_proposal`). Touches only chain c's rows (chains may run on threads)."""
    n_trees = parent.shape[0] // theta.shape[0]
    for r in range(c * n_trees, (c + 1) * n_trees):
        parent_p[r, :] = parent[r, :]
        kids_p[r, :, :] = kids[r, :, :]
        brlen_p[r, :] = brlen[r, :]
    theta_p[c, :] = theta[c, :]
    s = rng[c]
    m = pick(s, cdf)
    move_of[c] = m
    k = mparam[m]
    moved[c] = k
    if k >= 0:
        x = theta_p[c, off[k]:off[k + 1]]
        log_h[c] = _propose_param(mkind[m], s, x, tuning[c, m], scale[m, :x.shape[0]], bounds[m, 0], bounds[m, 1],
                                  alpha_factor[m])
    else:
        t = mtree[m]
        r = c * n_trees + t
        if mkind[m] == L.MULT_NNI:
            log_h[c] = mult_nni(parent_p, kids_p, brlen_p, n_tips, s, c * n_trees, mrows[m])
        elif mkind[m] >= L.FIRST_CLOCK:
            log_h[c] = 0.0
            return
        else:
            log_h[c] = _propose_tree(mkind[m], parent_p[r], kids_p[r], brlen_p[r], n_tips, s, tuning[c, m], lo[t],
                                     hi[t], anchor, pars[t])
        sort_kids(kids_p[r])       # states keep children in order (trees.sort_kids says why)
        f0, f1 = cons_first[t], cons_first[t + 1]
        if log_h[c] != -math.inf and L.FIRST_TOPOLOGY <= mkind[m] <= L.LAST_TOPOLOGY and not constraints_hold(
                parent_p[r], kids_p[r], n_tips, cons_kind[f0:f1], cons_a[f0:f1], cons_b[f0:f1]):
            log_h[c] = -math.inf
        if log_h[c] != -math.inf:
            for d in range(todo.shape[0]):
                if mrows[m, div_tree[d]]:
                    todo[d, c] = 1


@numba.njit(**JIT_OPTIONS)
def _live_params(c0, c1, moved, log_h, by_param):
    """List in by_param the chains whose parameter proposal is live; returns how many."""
    n_param = 0
    for c in range(c0, c1):
        if moved[c] >= 0 and log_h[c] != -math.inf:
            by_param[n_param] = c
            n_param += 1
    return n_param


@numba.njit(**JIT_OPTIONS)
def clock_proposal(c, s, m, parent_p, kids_p, brlen_p, mkind, mtree, mrows, bounds, tuning, ck, cpars, brl_p, log_h,
                   todo, div_tree):
    """Chain c's clock move m (picked by propose_chain) on its clock rows `ck` (mbgpu.core.clock_moves); a live
    one that changed branch lengths marks the pattern sets on its tree (a tree-prior parameter's does not)."""
    t = mtree[m]
    r = c * (parent_p.shape[0] // brl_p.shape[0]) + t
    log_h[c] = propose_clock(mkind[m], c, s, tuning[c, m], bounds[m, 0], bounds[m, 1], ck, cpars, parent_p[r],
                             kids_p[r], brlen_p[r], brl_p, t)
    if log_h[c] != -math.inf and mkind[m] < L.FIRST_CLOCK_PARAM:
        for d in range(todo.shape[0]):
            if mrows[m, div_tree[d]]:
                todo[d, c] = 1


@numba.njit(**JIT_OPTIONS)
def propose_one(c, rng, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, mkind, mparam, mtree, mrows,
                cdf, bounds, scale, alpha_factor, tuning, off, n_tips, lo, hi, anchor, cons_kind, cons_a, cons_b,
                cons_first, pars, move_of, log_h, moved, todo, div_tree, ck, cpars, brl_p):
    """Chain c proposes (propose_chain; a clock move: clock_proposal on the clock rows `ck` with
    ParsSPRClock's data `cpars`, its clock log prior into brl_p). Its pattern sets' todo are not cleared."""
    propose_chain(c, rng, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, mkind, mparam, mtree,
                  mrows, cdf, bounds, scale, alpha_factor, tuning, off, n_tips, lo, hi, anchor, cons_kind, cons_a,
                  cons_b, cons_first, pars, move_of, log_h, moved, todo, div_tree)
    ck.live[c] = 0
    if mkind[move_of[c]] >= L.FIRST_CLOCK:
        clock_proposal(c, rng[c], move_of[c], parent_p, kids_p, brlen_p, mkind, mtree, mrows, bounds, tuning, ck,
                       cpars, brl_p, log_h, todo, div_tree)


@numba.njit(**JIT_OPTIONS)
def propose_all(rng, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, mkind, mparam, mtree, mrows,
                cdf, bounds, scale, alpha_factor, tuning, off, n_tips, lo, hi, anchor, cons_kind, cons_a, cons_b,
                cons_first, pars, move_of, log_h, moved, todo, div_tree, by_param, c0, c1, ck, cpars, brl_p):
    """Each chain c0 <= c < c1 proposes (propose_one); the chains whose parameter proposal is live are
    listed in by_param (the caller builds their models); returns how many."""
    todo[:, c0:c1] = 0
    for c in range(c0, c1):
        propose_one(c, rng, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, mkind, mparam, mtree,
                    mrows, cdf, bounds, scale, alpha_factor, tuning, off, n_tips, lo, hi, anchor, cons_kind, cons_a,
                    cons_b, cons_first, pars, move_of, log_h, moved, todo, div_tree, ck, cpars, brl_p)
    return _live_params(c0, c1, moved, log_h, by_param)


@numba.njit(**JIT_OPTIONS)
def _record(c, m, accepted, tunefreq, autotune, counts, last_rate, tuning, tree_batches, tuned, target,
            is_alpha, mparam, tune_range):
    """MrBayes' counters and, every `tunefreq` tries, autotuning toward the move's target rate."""
    cnt = counts[c, m]
    cnt[0] += 1
    cnt[2] += 1
    if accepted:
        cnt[1] += 1
        cnt[3] += 1
    if cnt[2] < tunefreq:
        return
    rate = cnt[3] / cnt[2]
    cnt[4] += 1
    cnt[2] = 0
    cnt[3] = 0
    last_rate[c, m] = rate
    t = tuned[m]
    if not autotune or t < 0:
        return
    if mparam[m] >= 0:
        tuning[c, m, t] = tune_param(tuning[c, m, t], rate, target[m], cnt[4], is_alpha[m])
    else:
        tree_batches[c, m] += 1
        tuning[c, m, t] = autotune_multiplier_within(tuning[c, m, t], rate, target[m], tree_batches[c, m],
                                                     tune_range[m, 0], tune_range[m, 1])


@numba.njit(**JIT_OPTIONS)
def _tree_terms(c, m, live, mrows, brl, brl_p, kind, args, parent_p, brlen_p, n_tips):
    """brl_p[c]: chain c's branch-length terms, those of the trees move m changed computed from the
    proposal when `live` (a tree move; tree u's prior kind[u], args[u]; a clock tree's from its proposal,
    already in brl_p); returns their sum in tree order (the order of
    mbgpu.sampler.setup.Prior.total_of_trees; one tree: the term itself)."""
    n_trees = brl.shape[1]
    total = 0.0
    for u in range(n_trees):
        x = brl[c, u]
        if live and mrows[m, u] and kind[u] != CLOCK:       # a clock tree's: computed when proposed
            x = brlens_log_prior(kind[u], args[u], parent_p[c * n_trees + u], brlen_p[c * n_trees + u], n_tips)
        elif live and mrows[m, u]:
            x = brl_p[c, u]
        brl_p[c, u] = x
        total = x if u == 0 else total + x
    return total


@numba.njit(**JIT_OPTIONS)
def decide_all(rng, heat, power, parent, kids, brlen, theta, parent_p, kids_p, brlen_p, theta_p, n_tips, brl_kind,
               brl_args, topology, lnl, lnpr, best, brl, brl_p, pterm, pterm_new, div_lnl, div_lnl_p, todo, move_of,
               log_h, moved, accepted, tunefreq, autotune, counts, last_rate, tuning, tree_batches, tuned, target,
               is_alpha, mparam, mrows, tune_range, c0, c1):
    """Each chain c0 <= c < c1: the proposal's log prior and likelihood, accept or reject, count and tune.
    `power`: the likelihood's power in the acceptance (stepping-stone's step; 1.0 in mcmc, exact then).
    Returns -1, or the first chain whose proposal has a NaN or +inf log likelihood (an error)."""
    n_div, n_trees = div_lnl.shape[0], brl.shape[1]
    for c in range(c0, c1):
        m = move_of[c]
        accepted[c] = False
        if log_h[c] == -math.inf:
            _record(c, m, False, tunefreq, autotune, counts, last_rate, tuning, tree_batches, tuned, target,
                    is_alpha, mparam, tune_range)
            if lnl[c] > best[c]:
                best[c] = lnl[c]
            continue
        new_sum, old_sum = 0.0, 0.0
        for d in range(n_div):
            if todo[d, c] != 0:
                new_sum += div_lnl_p[d, c]
                old_sum += div_lnl[d, c]
        new_lnl = lnl[c] + new_sum - old_sum
        if math.isnan(new_lnl) or new_lnl == math.inf:
            return c
        k = moved[c]
        new_lnpr = _tree_terms(c, m, k < 0, mrows, brl, brl_p, brl_kind, brl_args, parent_p, brlen_p, n_tips)
        new_lnpr += topology
        for j in range(pterm.shape[1]):
            new_lnpr += pterm_new[c] if j == k else pterm[c, j]
        log_r = heat[c] * (power * (new_lnl - lnl[c]) + (new_lnpr - lnpr[c])) + log_h[c]
        ok = new_lnl > -math.inf and new_lnpr > -math.inf
        if ok and log_r < 0.0:
            ok = math.log(uniform(rng[c])) < log_r
        accepted[c] = ok
        if ok:
            for u in range(n_trees):
                if k < 0 and mrows[m, u]:
                    r = c * n_trees + u
                    parent[r, :] = parent_p[r, :]
                    kids[r, :, :] = kids_p[r, :, :]
                    brlen[r, :] = brlen_p[r, :]
                    brl[c, u] = brl_p[c, u]
            theta[c, :] = theta_p[c, :]
            lnl[c], lnpr[c] = new_lnl, new_lnpr
            if k >= 0:
                pterm[c, k] = pterm_new[c]
        if lnl[c] > best[c]:           # MrBayes' maxLnL0: the state after every step, of the chain's heat
            best[c] = lnl[c]
        _record(c, m, ok, tunefreq, autotune, counts, last_rate, tuning, tree_batches, tuned, target, is_alpha,
                mparam, tune_range)
    return -1
