"""Several generations in one compiled call, for a run whose chains the core steps on the CPU with one
tree (any number of pattern sets; clock trees and coding=variable included): propose, parameter models
and priors, likelihoods, decisions and heat swaps of every generation until the loop next has something
to do (a sample, a screen line, a diagnostic, a checkpoint). A generation costs ~300 us of compiled
work on small data (primates); the interpreted loop around it cost ~60 us more, which this removes.
One thread steps the chains generation by generation (`run_block`); several hand chains to each other
with no barrier per generation (mbgpu.core.handoff). The block's swap draws are taken beforehand in
MC3.swap_all's order, so the draws, each chain's order of work and the files are those of the
per-generation path (CoreStepper.step and MC3.swap_all) for any thread count; tests compare them.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import typed

from mbgpu.core import handoff
from mbgpu.clock.relaxed_lengths import CPP
from mbgpu.core.chain_generation import BAD_LNL, DONE, GROW, HOST_MODEL, chain_generation, swap_one, swap_pair
from mbgpu.core.clock_moves import events_near_full
from mbgpu.core.division import DivisionArrays, evaluate_chains
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def typed_list(items):
    """`items`, a tuple of one type, as a numba typed List (what prange and handoff's threads take for the
    pattern sets). Built here, the list's compiled methods come from numba's cache: typed.List filled from
    Python compiles them again in every process (3.3 s on the 2-core VM for one run's four lists)."""
    out = typed.List()
    for x in items:
        out.append(x)
    return out


@numba.njit(**JIT_OPTIONS)
def swap_heats(draws, ranks, temp, nswaps, tried, accepted, lnl, lnpr, power, counts, last_rate, tuning, tree_batches,
               best, r0, r1):
    """MC3.swap_all over arrays for runs r0 <= r < r1: nswaps heat swaps per run (ranks[r, position] =
    heat rank; chain r * nchains + position), run r's swap s from draws[3 (r nswaps + s) ...] (one
    generation's draws of the swap stream for every run), as mbgpu.sampler.swaps.swap_with (lnL at `power`);
    an accepted swap also exchanges the two chains' move statistics and best lnL (swap_one)."""
    n = ranks.shape[1]
    if n < 2:
        return
    for r in range(r0, r1):
        for s in range(nswaps):
            i = 3 * (r * nswaps + s)
            a, b = swap_pair(draws[i], draws[i + 1], n)
            swap_one(r, a, b, draws[i + 2], ranks, temp, tried, accepted, lnl, lnpr, power, counts, last_rate, tuning,
                     tree_batches, best)


@numba.njit(**JIT_OPTIONS)
def _heats(ranks, temp, heats, r0, r1):
    n = ranks.shape[1]
    for r in range(r0, r1):
        for p in range(n):
            heats[r * n + p] = 1.0 / (1.0 + temp * ranks[r, p])


@numba.njit(**JIT_OPTIONS)
def run_block(n_gen, first_gen, swapfreq, row0, draws, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch,
              new_q, eval_args, dec_args, keep_rows, swap_args, shared, heats, failed):
    """Generations first_gen .. first_gen + n_gen - 1 of every chain on this thread, heat swaps after those
    that are multiples of swapfreq (generation g's swap draws: row g // swapfreq - row0). Returns (status,
    generations completed, chains in `failed`): DONE; BAD_LNL (`failed[0]`'s proposal gave a NaN or +inf
    lnL); HOST_MODEL (in the generation after those completed, the chains in `failed` have proposed and
    planned but need their model from the host; the others have finished it); GROW (a CPP clock's event
    rows must widen before the next generation, as the per-generation step widens them)."""
    ranks = swap_args[0]
    n_chains, n_runs = failed.shape[0], ranks.shape[0]
    for g in range(n_gen):
        nf = 0
        for c in range(n_chains):
            got = chain_generation(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, eval_args,
                                   dec_args, keep_rows, shared)
            if got == BAD_LNL:
                failed[0] = c
                return BAD_LNL, g, 1
            if got != DONE:
                failed[nf] = c
                nf += 1
        if nf:
            return HOST_MODEL, g, nf
        gen = first_gen + g
        if gen % swapfreq == 0 and ranks.shape[1] > 1:
            swap_heats(draws[gen // swapfreq - row0], *swap_args, 0, n_runs)
            _heats(ranks, swap_args[1], heats, 0, n_runs)
        if events_near_full(ck):
            return GROW, g + 1, 0
    return DONE, n_gen, 0


class BlockRunner:
    """Runs an MC3's generations in compiled blocks when its chains' core allows (`for_mc3`): on one of
    numba's threads generation by generation, on several with chains handed between threads."""

    def __init__(self, core, runs: list[int], nchains: int):
        """Raises numba's TypingError when the pattern sets' arrays differ in type (their typed lists take
        one type): for_mc3 then steps generation by generation."""
        self.core, self.runs = core, runs           # the runs whose chains `core` holds, in its order
        pt, t, mv, ds = core.priors, core.trees, core.moves, core.divisions
        rows = [(d.evals, d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar, d.mult) for d in ds]
        touch = np.zeros((len(core.params), len(ds)), dtype=np.bool_)   # touch[k, j]: parameter k's model
        for k, js in enumerate(core.touches):                          # reaches pattern set j
            touch[k, js] = True
        self.plan = ((pt.kind, pt.args, pt.alphas, pt.weights),
                     typed_list(tuple((sm.desc, sm.fixed, sm.s0, sm.pi0) for sm in core.set_models)),
                     typed_list(tuple(rows)),
                     touch, np.array(core.new_q, dtype=np.bool_))
        self.head = (core.rng, t.parent, t.kids, t.brlen, core.theta, t.parent_p, t.kids_p, t.brlen_p, core.theta_p,
                     mv.kind, mv.param, mv.tree, mv.rows, mv.cdf, mv.bounds, mv.scale, mv.alpha_factor, mv.tuning,
                     core.layout.off, core.n_tips, core.lo, core.hi, core.anchor) + core.cons
        one = core.pars[0][-1].copy()
        one[0] = 1
        self.pars = core.pars[0][:-1] + (one,)             # ParsSPR's Fitch pass on one thread
        self.tail = (core.move_of, core.log_h, core.moved, core.todo, core.div_tree)
        self.likelihood_args(core, rows)
        self.keep = typed_list(tuple((d.bslot, d.mslot, d.bslot_p, d.mslot_p, d.lnl, d.lnl_p) + r
                                     for d, r in zip(ds, rows)))
        self.unobserved = np.array([float(d.unobserved_weight) for d in ds])
        self.need = np.zeros((len(ds), core.lnl.size), dtype=np.bool_)   # need[j, c]: the host builds the model
        self.shared = (core.rng, core.rng_out, core.todo, core.moved, core.layout.off, core.theta_p, core.pterm_new,
                       core.accepted, core.log_h, self.unobserved, self.need)
        self.n_chains = len(runs) * nchains
        self.failed = np.zeros(self.n_chains, dtype=np.int64)

    def likelihood_args(self, core, rows) -> None:
        """What the compiled generation evaluates the pattern sets with: each set's host buffers."""
        t, ds = core.trees, core.divisions
        self.evals = [(t.parent_p, t.kids_p, t.brlen_p, t.parent, t.brlen, d.bslot, d.mslot, d.bslot_p, d.mslot_p,
                       d.n_tips) + r + (d.partials, d.tip_x, d.matrices, d.scale, d.scaled, d.weights, d.compat,
                                        d.lnl_p) + tuple(d.scratch) for d, r in zip(ds, rows)]
        self.eval = typed_list(tuple(self.evals))

    @staticmethod
    def for_mc3(mc3):
        """A BlockRunner for the chains of `mc3`'s held runs; None while the core is not built; False where
        generations go one by one: on a GPU, under MPI where a run spans processes (MC3.held_runs) or a
        pattern set's sites (sitesplit), several trees, a prior the core cannot compute, a pattern set whose
        model the core does not describe."""
        runs = mc3.held_runs()
        if not mc3.compiled_blocks or not runs:
            return False
        held = mc3.runs[runs[0]][0]._core
        if held is None:
            return None
        core = held[0]
        if core.n_trees != 1 or not core.priors.ok or any(sm is None for sm in core.set_models):
            return False
        from mbgpu.core.device_block import DeviceBlockRunner

        if DeviceBlockRunner.takes(core):
            runner = DeviceBlockRunner
        elif core.groups == 1 and all(type(d) is DivisionArrays and d.sum_each is None for d in core.divisions):
            runner = BlockRunner
        else:
            return False
        try:
            return runner(core, runs, mc3.opts.nchains)
        except numba.core.errors.TypingError:           # pattern sets of different array types
            return False

    def run(self, mc3, first: int, last: int) -> int:
        """Generations first..last of mc3 (a chain whose model must come from the host gets it between
        two compiled calls); returns last."""
        core, o, held = self.core, mc3.opts, self.runs
        ranks = np.array([mc3.ranks[r] for r in held], dtype=np.int64)
        tried = np.array([mc3.swaps[r].tried for r in held], dtype=np.int64)
        sw_acc = np.array([mc3.swaps[r].accepted for r in held], dtype=np.int64)
        heats = core.heats_for([mc3.ranks[r] for r in held], o.temp).copy()
        row0 = (first - 1) // o.swapfreq + 1
        rows = last // o.swapfreq - row0 + 1 if o.nchains > 1 else 0
        draws = mc3.swap_rng.random((rows, 3 * o.nswaps * len(mc3.runs)))     # swap_all's, in its order
        if len(held) < len(mc3.runs):              # every run's draws are taken (one stream), these runs' used
            k = 3 * o.nswaps
            draws = np.ascontiguousarray(draws[:, [r * k + j for r in held for j in range(k)]])
        power = float(o.power)
        job = _Job(first, last, int(o.swapfreq), row0, draws, heats,
                   core.decide_args(heats, o.tunefreq, o.autotune, power),
                   (ranks, float(o.temp), int(o.nswaps), tried, sw_acc, core.lnl, core.lnpr, power)
                   + core.heat_stats(), o)
        self.generations(job)
        for r, row in zip(held, ranks.tolist()):
            mc3.ranks[r][:] = row
        for r, t, a in zip(held, tried.tolist(), sw_acc.tolist()):
            mc3.swaps[r].tried, mc3.swaps[r].accepted = t, a
        core.publish()
        return last

    def generations(self, job) -> None:
        """The block's generations: on numba's threads with chains handed between them, or on this one."""
        workers = min(numba.get_num_threads(), self.n_chains)
        if workers > 1 and self.core.ck.relaxed != CPP:       # CPP rows may widen between generations: one thread
            self._handoff(job, workers)
        else:
            self._serial(job)

    def _finish_on_host(self, job, c: int) -> None:
        """Chain c's generation, proposed and planned in compiled code, with its model built on the host."""
        o, core = job.opts, self.core
        for j in np.flatnonzero(self.need[:, c]).tolist():
            core.host_model(c, j)
            self.need[j, c] = False
        for j, args in enumerate(self.evals):
            evaluate_chains(c, c + 1, core.todo[j], self.unobserved[j], args)
        core.finish(job.heats, o.tunefreq, o.autotune, c, c + 1, o.power)

    def _serial(self, job) -> None:
        """The block on this thread, generation by generation."""
        core, gen, (pri, sm, rows, touch, new_q) = self.core, job.first, self.plan
        ranks, n_runs = job.swap[0], job.swap[0].shape[0]
        while gen <= job.last:
            status, done, nf = run_block(job.last - gen + 1, gen, job.swapfreq, job.row0, job.draws, self.head,
                                         self.pars, core.ck, core.cpars, core.brl_p, self.tail, pri, sm, rows, touch,
                                         new_q, self.eval, job.dec, self.keep, job.swap, self.shared, job.heats,
                                         self.failed)
            if status == DONE:
                return
            if status == GROW:
                core.grow_clock_events()
                gen += done
                continue
            if status == BAD_LNL:
                core.proposal_error(int(self.failed[0]))
            gen += done                            # HOST_MODEL: finish those chains' generation
            for c in self.failed[:nf].tolist():
                self._finish_on_host(job, c)
            if gen % job.swapfreq == 0 and ranks.shape[1] > 1:
                swap_heats(job.draws[gen // job.swapfreq - job.row0], *job.swap, 0, n_runs)
                _heats(ranks, job.swap[1], job.heats, 0, n_runs)
            gen += 1

    def _handoff(self, job, workers: int) -> None:
        """The block on `workers` threads (mbgpu.core.handoff); chains parked for the host are finished
        here between compiled calls."""
        (pri, sm, rows, touch, new_q), P = self.plan, handoff.PAD
        ranks = job.swap[0]
        events = handoff.swap_events(job.first, job.last, job.swapfreq, job.row0, job.draws, ranks.shape[0],
                                     ranks.shape[1], job.swap[2])
        state = handoff.new_state(self.n_chains, job.first)
        while True:
            handoff.run_handoff(workers, job.last, self.head, self.pars, self.core.ck, self.core.cpars, self.core.brl_p,
                                self.tail, pri, sm, rows, touch, new_q, self.eval, job.dec, self.keep, self.shared,
                                job.swap, job.heats, events, state)
            parked = state[handoff.PARKED:self.n_chains * P:P]
            if state[self.n_chains * P]:
                self.core.proposal_error(int(np.flatnonzero(parked == 2)[0]))
            waiting = [c for c in np.flatnonzero(parked == 1).tolist() if not handoff.owes_swap(c, state, events)]
            if not waiting:
                break
            for c in waiting:                      # their swaps done: decide at the heats they now have
                self._finish_on_host(job, c)
                state[c * P + handoff.GEN] += 1
                state[c * P + handoff.PARKED] = 0
        gens, nxt = state[handoff.GEN:self.n_chains * P:P], state[handoff.NEXT:self.n_chains * P:P]
        if (gens != job.last).any() or (nxt != events[3]).any():
            raise RuntimeError("chains stopped short of generation %d in a block on threads" % job.last)


class _Job:
    """What every part of one block reads: its generations, the swap draws, heats and arrays."""

    def __init__(self, first, last, swapfreq, row0, draws, heats, dec, swap, opts):
        self.first, self.last, self.swapfreq, self.row0, self.draws = first, last, swapfreq, row0, draws
        self.heats, self.dec, self.swap, self.opts = heats, dec, swap, opts
