"""One chain's generation and one heat swap, compiled: the units that both ways of running a block
(mbgpu.core.block, one thread; mbgpu.core.handoff, several) are made of. Each touches only its own
chain's rows (a swap: its two chains' rows and their run's tables), so chains may run on threads.
"""
from __future__ import annotations

import math

import numba

from mbgpu.core.division import evaluate_range, keep_division
from mbgpu.core.models import model_proposal, param_log_prior
from mbgpu.core.step import decide_all, propose_chain
from mbgpu.jit import JIT_OPTIONS

DONE, BAD_LNL, HOST_MODEL = 0, 1, 2     # how a chain's generation ended


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
def plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo):
    """Chain c's live parameter proposal: its prior term and, where the move changes pattern set 0's
    model, that model (CoreStepper._plan for one pattern set). False: the core cannot compute it (the
    host builds it)."""
    kind, args, alphas, weights = pri
    desc, fixed, s0, pi0 = sm
    k = moved[c]
    pterm_new[c] = param_log_prior(kind[k], args[k], alphas[k], weights[k], theta_p[c, off[k]:off[k + 1]])
    if not touch[k]:
        return True
    todo[0, c] = 2
    return model_proposal(theta_p[c], desc, fixed, s0, pi0, *rows, c, new_q[k])


@numba.njit(**JIT_OPTIONS)
def chain_propose(c, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, shared):
    """The first part of chain c's generation, which its heat does not enter: propose, plan and evaluate.
    DONE, or HOST_MODEL (proposed and planned; its model must come from the host). Writes only the
    proposal's rows: the decided state, lnL and prior that a heat swap reads stay as they were. `pars`:
    ParsSPR's data of the chain's one tree (blocks run one pattern set, so one tree), a flat tuple (the
    threads of mbgpu.core.handoff take no nested tuples)."""
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h = shared
    todo[:, c] = 0
    propose_chain(c, *head, (pars,), *tail)
    if moved[c] >= 0 and log_h[c] != -math.inf:
        if not plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo):
            return HOST_MODEL
    evaluate_range(c, c + 1, todo[0], *eval_args)
    return DONE


@numba.njit(**JIT_OPTIONS)
def chain_decide(c, dec_args, keep_rows, shared):
    """The rest of chain c's generation, at its heat: decide and keep. DONE, or BAD_LNL (the proposal's lnL
    is NaN or +inf; undecided)."""
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h = shared
    if decide_all(*dec_args, c, c + 1) >= 0:
        return BAD_LNL
    keep_division(c, c + 1, todo[0], accepted, *keep_rows)
    rng_out[c] = rng[c]
    return DONE


@numba.njit(**JIT_OPTIONS)
def chain_generation(c, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, dec_args, keep_rows, shared):
    """One generation of chain c (chain_propose, then chain_decide): DONE, BAD_LNL or HOST_MODEL."""
    got = chain_propose(c, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, shared)
    if got != DONE:
        return got
    return chain_decide(c, dec_args, keep_rows, shared)
