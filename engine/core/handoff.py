"""A block of generations on several threads without a barrier per generation. Chains meet only at heat
swaps, and which two chains a swap pairs is fixed by its draws, known before the block; so a chain may
run ahead until its next swap, and waits only for that swap's partner. Even then it need not idle: its
next generation's proposal and likelihood (chain_propose) do not depend on its heat, only the decision
does (chain_decide), so a chain owing a swap computes its next proposal while it waits; the proposal uses
the move tuning of the chain's heat, so an accepted swap (which hands the tuning on with the heat) drops
it and the chain proposes again from the same draws. Each thread
takes whatever chain can move (its own first, for its caches): a chain's next generation or its
part, or a swap whose two chains have both reached it. A chain is held by one thread at a time (an
atomic claim); its rows are handed between threads through the claim's release and acquire
(mbgpu.core.atomics).

Every chain sees the generations, swaps and draws of the one-thread loop in the same order, so the files
do not depend on the thread count or on which thread stepped what. A chain whose model must come from
the host parks; the others go on until they need it; the host finishes it and the block resumes.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.core import atomics
from mbgpu.core.chain_generation import BAD_LNL, DONE, chain_decide, chain_propose, swap_one, swap_pair
from mbgpu.jit import JIT_OPTIONS

PAD = 8                                   # int64 fields per chain: one cache line
# per chain: last generation done, next own swap, held, parked (1: its model from the host, 2: bad lnL),
# ahead (the next generation's proposal is evaluated, its decision waits for a swap)
GEN, NEXT, CLAIM, PARKED, AHEAD = 0, 1, 2, 3, 4
NOTHING, DID, BUSY = 0, 1, 2              # what a look at a chain gave


@numba.njit(**JIT_OPTIONS)
def swap_events(first, last, swapfreq, row0, draws, nruns, n, nswaps):
    """The block's heat swaps in the loop's order: ev[e] = (generation, run, position a, position b),
    u[e] its acceptance uniform; own[c, k] = chain c's k-th swap, count[c] how many."""
    gens = 0
    if n > 1:
        for g in range(first, last + 1):
            if g % swapfreq == 0:
                gens += 1
    n_ev = gens * nruns * nswaps
    ev = np.empty((n_ev, 4), dtype=np.int64)
    u = np.empty(n_ev)
    own = np.empty((nruns * n, max(1, gens * nswaps)), dtype=np.int64)
    count = np.zeros(nruns * n, dtype=np.int64)
    e = 0
    for g in range(first, last + 1):
        if n < 2 or g % swapfreq != 0:
            continue
        row = draws[g // swapfreq - row0]
        for r in range(nruns):
            for s in range(nswaps):
                i = 3 * (r * nswaps + s)
                a, b = swap_pair(row[i], row[i + 1], n)
                ev[e, 0], ev[e, 1], ev[e, 2], ev[e, 3], u[e] = g, r, a, b, row[i + 2]
                for c in (r * n + a, r * n + b):
                    own[c, count[c]] = e
                    count[c] += 1
                e += 1
    return ev, u, own, count


def new_state(n_chains: int, first: int) -> np.ndarray:
    """Every chain at generation first - 1, no swap done, free; the last line holds the abort flag."""
    state = np.zeros((n_chains + 1) * PAD, dtype=np.int64)
    state[GEN:n_chains * PAD:PAD] = first - 1
    return state


@numba.njit(**JIT_OPTIONS)
def _pending(c, state, own, count):
    """Chain c's next swap, or -1 when it owes none."""
    k = atomics.load(state, c * PAD + NEXT)
    return own[c, k] if k < count[c] else -1


def owes_swap(c: int, state: np.ndarray, events) -> bool:
    """Whether chain c's next swap is at the generation it has done (it must be made before c decides
    its next generation)."""
    ev, _, own, count = events
    e = _pending(c, state, own, count)
    return bool(e >= 0 and ev[e, 0] == state[c * PAD + GEN])


@numba.njit(**JIT_OPTIONS)
def _forget_ahead(x, state, shared):
    """Chain x (claimed) took another heat's tuning in a swap: a proposal it made ahead of the swap (waiting
    for its decision, or parked for its model) used the old tuning, so it is dropped and its stream rewound
    to its last decision; the chain proposes again, with the draws and tuning of the one-thread loop."""
    if atomics.load(state, x * PAD + AHEAD) != 0 or atomics.load(state, x * PAD + PARKED) == 1:
        rng, rng_out = shared[0], shared[1]
        rng[x, :] = rng_out[x, :]
        atomics.store(state, x * PAD + AHEAD, 0)
        atomics.store(state, x * PAD + PARKED, 0)


@numba.njit(**JIT_OPTIONS)
def _swap(c, e, state, events, swap_args, heats, shared):
    """Swap e if its other chain has reached it too; both claimed while it is done."""
    ev, u, own, count = events
    ranks, temp = swap_args[0], swap_args[1]
    n = ranks.shape[1]
    r = ev[e, 1]
    q = r * n + ev[e, 2] if c != r * n + ev[e, 2] else r * n + ev[e, 3]
    if atomics.load(state, q * PAD + CLAIM) != 0:
        return BUSY
    if atomics.load(state, q * PAD + GEN) != ev[e, 0] or _pending(q, state, own, count) != e:
        return NOTHING                    # q's thread will find the swap when q gets there
    if not atomics.cas(state, c * PAD + CLAIM, 0, 1):
        return BUSY
    if not atomics.cas(state, q * PAD + CLAIM, 0, 1):
        atomics.store(state, c * PAD + CLAIM, 0)
        return BUSY
    ready = (atomics.load(state, c * PAD + GEN) == ev[e, 0] and _pending(c, state, own, count) == e
             and atomics.load(state, q * PAD + GEN) == ev[e, 0] and _pending(q, state, own, count) == e)
    if ready:
        a, b = ev[e, 2], ev[e, 3]
        took = swap_one(r, a, b, u[e], swap_args[0], temp, *swap_args[3:])
        heats[r * n + a] = 1.0 / (1.0 + temp * ranks[r, a])
        heats[r * n + b] = 1.0 / (1.0 + temp * ranks[r, b])
        for x in (c, q):
            if took:
                _forget_ahead(x, state, shared)
            atomics.store(state, x * PAD + NEXT, atomics.load(state, x * PAD + NEXT) + 1)
    atomics.store(state, q * PAD + CLAIM, 0)
    atomics.store(state, c * PAD + CLAIM, 0)
    return DID if ready else BUSY


@numba.njit(**JIT_OPTIONS)
def _look(c, last, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args, keep_rows,
          shared, swap_args, heats, events, state):
    """Move chain c on if it can: its swap; else its next generation, or the part of it that does not
    wait for the swap it owes. DID, NOTHING, or BUSY (another thread holds what it needs: look again).
    A chain parked for the host (its proposal evaluated but for its model) still takes its swap."""
    ev, u, own, count = events
    at = c * PAD
    if atomics.load(state, at + CLAIM) != 0:
        return BUSY
    g = atomics.load(state, at + GEN)
    e = _pending(c, state, own, count)
    owes = e >= 0 and ev[e, 0] == g
    swapped = NOTHING
    if owes:
        swapped = _swap(c, e, state, events, swap_args, heats, shared)
        if swapped == DID:
            return DID
    if atomics.load(state, at + PARKED) != 0 or g >= last:
        return swapped
    ahead = atomics.load(state, at + AHEAD)
    if owes and ahead:
        return swapped                    # the swap's partner is not there yet
    if not atomics.cas(state, at + CLAIM, 0, 1):
        return BUSY
    if (atomics.load(state, at + GEN) != g or _pending(c, state, own, count) != e
            or atomics.load(state, at + AHEAD) != ahead or atomics.load(state, at + PARKED) != 0):
        atomics.store(state, at + CLAIM, 0)
        return BUSY
    if not ahead:
        if chain_propose(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args,
                         shared) != DONE:
            atomics.store(state, at + PARKED, 1)
        elif owes:
            atomics.store(state, at + AHEAD, 1)
        ahead = atomics.load(state, at + PARKED) == 0 and not owes
    if ahead:
        if chain_decide(c, ck, dec_args, keep_rows, shared) == BAD_LNL:
            atomics.store(state, at + PARKED, 2)
            atomics.store(state, (state.shape[0] // PAD - 1) * PAD, 1)
        else:
            atomics.store(state, at + AHEAD, 0)
            atomics.store(state, at + GEN, g + 1)
    atomics.store(state, at + CLAIM, 0)
    return DID


@numba.njit(**JIT_OPTIONS)
def _worker(w, workers, last, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
            keep_rows, shared, swap_args, heats, events, state):
    """Thread w's part: move chains on, its own share (from chain w C / workers) first, until no chain can
    move and none is held (every thread that moves one looks again, so none is missed)."""
    n_chains = state.shape[0] // PAD - 1
    start = w * n_chains // workers
    while atomics.load(state, n_chains * PAD) == 0:
        busy = False
        moved = False
        for k in range(n_chains):
            c = start + k if start + k < n_chains else start + k - n_chains
            got = _look(c, last, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
                        keep_rows, shared, swap_args, heats, events, state)
            if got == DID:
                moved = True
                break
            busy = busy or got == BUSY
        if not moved and not busy:
            return


@numba.njit(parallel=True, **JIT_OPTIONS)
def run_handoff(workers, last, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
                keep_rows, shared, swap_args, heats, events, state):
    """Every chain on to generation `last` and through the block's swaps, on `workers` of numba's threads
    (arguments as flat tuples: numba's parallel loops take no nested ones). Returns when done, when a
    chain parked for the host (the rest as far as they go without it) or on a bad lnL (abort flag set)."""
    for w in numba.prange(workers):
        _worker(w, workers, last, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
                keep_rows, shared, swap_args, heats, events, state)
