"""One chain's generation and one heat swap, compiled: the units that both ways of running a block
(mbgpu.core.block, one thread; mbgpu.core.handoff, several) are made of. Each touches only its own
chain's rows (a swap: its two chains' rows and their run's tables), so chains may run on threads.
"""
from __future__ import annotations

import math

import numba

from mbgpu.core.clock_moves import keep_clock
from mbgpu.core.division import evaluate_chains, keep_division
from mbgpu.core.models import model_proposal, param_log_prior
from mbgpu.core.step import decide_all, propose_one
from mbgpu.jit import JIT_OPTIONS

DONE, BAD_LNL, HOST_MODEL, GROW = 0, 1, 2, 3     # how a chain's generation (GROW: a block) ended


@numba.njit(**JIT_OPTIONS)
def exchange_stats(ca, cb, counts, last_rate, tuning, tree_batches, best):
    """Chains ca and cb trade their move counters, tuning and best lnL: in MrBayes these belong to a heat
    (they are indexed by chainId), so they go with the heat when a swap exchanges it."""
    for m in range(counts.shape[1]):
        for k in range(counts.shape[2]):
            counts[ca, m, k], counts[cb, m, k] = counts[cb, m, k], counts[ca, m, k]
        last_rate[ca, m], last_rate[cb, m] = last_rate[cb, m], last_rate[ca, m]
        tree_batches[ca, m], tree_batches[cb, m] = tree_batches[cb, m], tree_batches[ca, m]
        for t in range(tuning.shape[2]):
            tuning[ca, m, t], tuning[cb, m, t] = tuning[cb, m, t], tuning[ca, m, t]
    best[ca], best[cb] = best[cb], best[ca]


@numba.njit(**JIT_OPTIONS)
def swap_one(r, a, b, d2, ranks, temp, tried, accepted, lnl, lnpr, power, counts, last_rate, tuning, tree_batches,
             best):
    """Run r's heat swap between positions a and b (chains r n + a, r n + b) with uniform d2, as
    mbgpu.sampler.swaps.swap_with (lnL at `power`): counts it; when accepted swaps their heat ranks and
    the statistics that go with a heat (exchange_stats). Returns whether it was accepted."""
    n = ranks.shape[1]
    ra, rb = ranks[r, a], ranks[r, b]
    ca, cb = r * n + a, r * n + b
    log_r = ((1.0 / (1.0 + temp * rb) - 1.0 / (1.0 + temp * ra))
             * ((power * lnl[ca] + lnpr[ca]) - (power * lnl[cb] + lnpr[cb])))
    ok = log_r >= 0 or math.log(d2) < log_r
    i, j = (ra, rb) if ra < rb else (rb, ra)
    tried[r, j, i] += 1
    tried[r, i, j] += 1
    if ok:
        accepted[r, i, j] += 1
        ranks[r, a], ranks[r, b] = rb, ra
        exchange_stats(ca, cb, counts, last_rate, tuning, tree_batches, best)
    return ok


@numba.njit(**JIT_OPTIONS)
def swap_pair(d0, d1, n):
    """The two positions a heat swap picks from its first two uniforms (MC3.swap_all's order)."""
    a = min(int(d0 * n), n - 1)
    b = min(int(d1 * (n - 1)), n - 2)
    if b >= a:
        b += 1
    return a, b


@numba.njit(**JIT_OPTIONS)
def plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need):
    """Chain c's live parameter proposal: its prior term and, for each pattern set j whose model the move
    changes (touch[k, j]), that model (CoreStepper._plan). False: the core could not compute some of them
    (need[j, c] set: the host builds those)."""
    kind, args, alphas, weights = pri
    k = moved[c]
    pterm_new[c] = param_log_prior(kind[k], args[k], alphas[k], weights[k], theta_p[c, off[k]:off[k + 1]])
    ok = True
    for j in range(touch.shape[1]):
        if touch[k, j]:
            todo[j, c] = 2
            desc, fixed, s0, pi0 = sm[j]
            evals, evecs, einv, crates, cweights, freqs, pinvar, mult = rows[j]
            if not model_proposal(theta_p[c], desc, fixed, s0, pi0, evals, evecs, einv, crates, cweights, freqs,
                                  pinvar, mult, c, new_q[k]):
                need[j, c] = True
                ok = False
    return ok


@numba.njit(**JIT_OPTIONS)
def evaluate_divisions(c, todo, unobserved, eval_args):
    """Chain c's proposal evaluated in every pattern set with work (evaluate_chains)."""
    for j in range(len(eval_args)):
        evaluate_chains(c, c + 1, todo[j], unobserved[j], eval_args[j])


@numba.njit(**JIT_OPTIONS)
def chain_propose(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, shared):
    """The first part of chain c's generation, which its heat does not enter: propose, plan and evaluate.
    DONE, or HOST_MODEL (proposed and planned; a model must come from the host). Writes only the
    proposal's rows: the decided state, lnL and prior that a heat swap reads stay as they were. `pars`:
    ParsSPR's data of the chain's one tree (blocks run one tree), a flat tuple (the threads of
    mbgpu.core.handoff take no nested tuples); ck, cpars, brl_p: its clock rows, ParsSPRClock's data and
    the clock log priors (mbgpu.core.step.propose_one). Per pattern set j (typed lists, which those threads
    take): sm[j] its model's description, rows[j] its model rows, eval_args[j] its evaluation arrays."""
    if propose_and_plan(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared) != DONE:
        return HOST_MODEL
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h, unobserved, need = shared
    evaluate_divisions(c, todo, unobserved, eval_args)
    return DONE


@numba.njit(**JIT_OPTIONS)
def propose_and_plan(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared):
    """Chain c proposes and, for a live parameter proposal, its prior term and models are planned
    (chain_propose without the evaluation): DONE, or HOST_MODEL (a model must come from the host)."""
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h, unobserved, need = shared
    todo[:, c] = 0
    propose_one(c, *head, (pars,), *tail, ck, cpars, brl_p)
    if moved[c] >= 0 and log_h[c] != -math.inf:
        if not plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo, need):
            return HOST_MODEL
    return DONE


@numba.njit(**JIT_OPTIONS)
def chain_decide(c, ck, dec_args, keep_rows, shared):
    """The rest of chain c's generation, at its heat: decide and keep (every pattern set's rows
    `keep_rows[j]`, its clock rows `ck`). DONE, or BAD_LNL (the proposal's lnL is NaN or +inf; undecided)."""
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h, unobserved, need = shared
    if decide_all(*dec_args, c, c + 1) >= 0:
        return BAD_LNL
    for j in range(len(keep_rows)):
        bslot, mslot, bslot_p, mslot_p, lnl, lnl_p, evals, evecs, einv, crates, cweights, freqs, pinvar, mult = \
            keep_rows[j]
        keep_division(c, c + 1, todo[j], accepted, bslot, mslot, bslot_p, mslot_p, lnl, lnl_p, evals, evecs, einv,
                      crates, cweights, freqs, pinvar, mult)
    keep_clock(accepted, c, c + 1, ck)
    rng_out[c] = rng[c]
    return DONE


@numba.njit(**JIT_OPTIONS)
def chain_generation(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
                     keep_rows, shared):
    """One generation of chain c (chain_propose, then chain_decide): DONE, BAD_LNL or HOST_MODEL."""
    got = chain_propose(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, shared)
    if got != DONE:
        return got
    return chain_decide(c, ck, dec_args, keep_rows, shared)
