"""Several generations of a GPU process' chains in one compiled call: core.block's blocks for chains whose
pattern sets are on a CUDA device, their flushes queued and collected by compiled code
(mbgpu.cuda.core_flush). What it removes is the interpreted loop of the per-generation path (CoreStepper.step,
MC3's swaps and checks), which set a GPU rank's fixed cost per generation (issue 23).

The chains go in the per-generation path's groups (two when there are two chains or more), and group 0
proposes its next generation as soon as it has decided, so the device works while the host decides group
1 and swaps; a swap that hands a chain of group 0 another heat's tuning makes that proposal again from the
chain's stream at its last decision. Each chain's draws and work are those of the per-generation path, so
the files are too (tests compare them). A chain whose proposed model the host must build ends the block
before that generation, undone: the runner steps it generation by generation (mbgpu.core.block).
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.clock.relaxed_lengths import CPP
from mbgpu.core.block import BlockRunner, swap_heats, typed_list
from mbgpu.core.chain_generation import BAD_LNL, DONE, HOST_MODEL, chain_decide, propose_and_plan, swap_one, swap_pair
from mbgpu.core.device_division import DeviceDivision, plan_flush
from mbgpu.cuda.core_flush import NEED_COMPAT, clock_ns, collect_sums, launch_planned
from mbgpu.errors import DeviceError
from mbgpu.jit import JIT_OPTIONS

DRIVER = 4           # run_device_block: a CUDA driver call failed (its CUresult in failed[0])
NO_TABLE = 100000    # ... or a flush needs the invariant-site table, which the runner builds before a block


@numba.njit(**JIT_OPTIONS)
def _rewind(c0, c1, rng, rng_out):
    """Chains c0..c1-1's streams back to their last decision (their proposal is dropped)."""
    for c in range(c0, c1):
        rng[c, :] = rng_out[c, :]


@numba.njit(**JIT_OPTIONS)
def _queue(grp, c0, c1, plan, fl):
    """Pattern set's flush of chains c0..c1-1 (group grp) planned into the group's page-locked blob and
    queued (nothing when none of them has work there); 0 or a CUresult."""
    (todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, lanes, geometry, evals,
     evecs, einv, crates, cweights, freqs, pinvar, mult, marks, orders, mats, tally, sizes) = plan
    blobs, reals, sums, d_blob, d_sums, events, streams, table, kernels, geo, ptrs, vals, argp, lnl_p, state = fl
    state[grp, 0] = 0
    live = False
    for c in range(c0, c1):
        if todo[c] != 0:
            live = True
    if not live:
        return 0
    total, n_eig, params_at = plan_flush(c0, c1, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p,
                                         mslot_p, n_tips, lanes, geometry, evals, evecs, einv, crates, cweights, freqs,
                                         pinvar, mult, marks, orders, mats, tally, sizes, blobs[grp], reals[grp])
    status, n_roots, gx = launch_planned(sizes, total, n_eig, params_at, blobs[grp], d_blob[grp], d_sums[grp],
                                         sums[grp], events[grp], table, kernels, geo, ptrs, vals, argp, streams[grp])
    if status != 0:
        return NO_TABLE if status == NEED_COMPAT else status
    state[grp, 0], state[grp, 1] = n_roots, gx
    return 0


@numba.njit(**JIT_OPTIONS)
def _collect(grp, c0, c1, plans, flushes):
    """Every pattern set's flush of group grp waited for (the wait timed into state[grp, 2:4]); the chains'
    lnLs into lnl_p. 0 or a CUresult."""
    for j in range(len(flushes)):
        blobs, reals, sums, d_blob, d_sums, events, streams, table, kernels, geo, ptrs, vals, argp, lnl_p, state = \
            flushes[j]
        if state[grp, 0] > 0:
            t0 = clock_ns(table)
            got = collect_sums(table, events[grp], sums[grp], state[grp, 0], state[grp, 1], plans[j][0], c0, c1,
                               lnl_p)
            state[grp, 0] = 0
            state[grp, 2] += clock_ns(table) - t0
            state[grp, 3] += 1
            if got != 0:
                return got
    return 0


@numba.njit(**JIT_OPTIONS)
def _start(grp, c0, c1, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared, plans, flushes):
    """Group grp proposes and its flushes are queued: DONE, HOST_MODEL (a chain needs its model from the
    host: the group is rewound, nothing queued) or -CUresult."""
    for c in range(c0, c1):
        if propose_and_plan(c, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared) != DONE:
            _rewind(c0, c1, shared[0], shared[1])
            return HOST_MODEL
    for j in range(len(plans)):
        got = _queue(grp, c0, c1, plans[j], flushes[j])
        if got != 0:
            return -got
    return DONE


@numba.njit(**JIT_OPTIONS)
def _finish(grp, c0, c1, ck, dec_args, keep_rows, shared, plans, flushes, failed):
    """Group grp's likelihoods collected, its chains decided and kept: DONE, BAD_LNL (failed[0]: the chain)
    or DRIVER (failed[0]: the CUresult)."""
    got = _collect(grp, c0, c1, plans, flushes)
    if got != 0:
        failed[0] = got
        return DRIVER
    for c in range(c0, c1):
        if chain_decide(c, ck, dec_args, keep_rows, shared) == BAD_LNL:
            failed[0] = c
            return BAD_LNL
    return DONE


@numba.njit(**JIT_OPTIONS)
def _drop(grp, bounds, plans, flushes, rng, rng_out):
    """Group grp's generation in flight undone: its flushes waited for, its streams back at their last
    decision. 0 or a CUresult."""
    got = _collect(grp, bounds[grp], bounds[grp + 1], plans, flushes)
    _rewind(bounds[grp], bounds[grp + 1], rng, rng_out)
    return got


@numba.njit(**JIT_OPTIONS)
def _start_ahead(bounds, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared, plans, flushes):
    """Group 0's next generation proposed and queued early: (in flight, its model must come from the host,
    0 or a CUresult)."""
    got = _start(0, bounds[0], bounds[1], head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch, new_q, shared,
                 plans, flushes)
    return got == DONE, got == HOST_MODEL, -got if got < 0 else 0


@numba.njit(**JIT_OPTIONS)
def swap_runs(draws, ranks, temp, nswaps, tried, accepted, lnl, lnpr, power, counts, last_rate, tuning, tree_batches,
              best, c_ahead):
    """core.block.swap_heats for every run; whether an accepted swap exchanged the statistics of a chain
    c < c_ahead (one whose proposal was made ahead with the tuning it no longer has)."""
    n = ranks.shape[1]
    touched = False
    if n < 2:
        return touched
    for r in range(ranks.shape[0]):
        for s in range(nswaps):
            i = 3 * (r * nswaps + s)
            a, b = swap_pair(draws[i], draws[i + 1], n)
            if swap_one(r, a, b, draws[i + 2], ranks, temp, tried, accepted, lnl, lnpr, power, counts, last_rate,
                        tuning, tree_batches, best) and (r * n + a < c_ahead or r * n + b < c_ahead):
                touched = True
    return touched


@numba.njit(**JIT_OPTIONS)
def _heats(ranks, temp, heats):
    n = ranks.shape[1]
    for r in range(ranks.shape[0]):
        for p in range(n):
            heats[r * n + p] = 1.0 / (1.0 + temp * ranks[r, p])


@numba.njit(**JIT_OPTIONS)
def run_device_block(n_gen, first_gen, swapfreq, row0, draws, bounds, head, pars, ck, cpars, brl_p, tail, pri, sm,
                     rows, touch, new_q, plans, flushes, dec_args, keep_rows, swap_args, shared, heats, failed):
    """Generations first_gen .. first_gen + n_gen - 1 of every chain, in groups bounds[g]..bounds[g + 1] - 1,
    heat swaps after those that are multiples of swapfreq (draws as core.block.run_block's). Returns
    (status, generations completed): DONE; HOST_MODEL (the next generation, undone, needs a model from the
    host: step it generation by generation); BAD_LNL or DRIVER (failed[0])."""
    rng, rng_out = shared[0], shared[1]
    ranks, temp = swap_args[0], swap_args[1]
    k = bounds.shape[0] - 1
    ahead = False
    for g in range(n_gen):
        gen = first_gen + g
        for grp in range(k):
            if grp == 0 and ahead:
                continue
            got = _start(grp, bounds[grp], bounds[grp + 1], head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch,
                         new_q, shared, plans, flushes)
            if got != DONE:
                err = -got if got < 0 else 0
                for before in range(grp):            # undo the generation: earlier groups are in flight
                    dropped = _drop(before, bounds, plans, flushes, rng, rng_out)
                    err = dropped if err == 0 else err
                if err != 0:
                    failed[0] = err
                    return DRIVER, g
                return HOST_MODEL, g
        ahead, stop = False, False
        for grp in range(k):
            got = _finish(grp, bounds[grp], bounds[grp + 1], ck, dec_args, keep_rows, shared, plans, flushes, failed)
            if got != DONE:
                return got, g
            if grp == 0 and k > 1 and g + 1 < n_gen:  # group 0's next generation, while group 1 is computed
                ahead, stop, err = _start_ahead(bounds, head, pars, ck, cpars, brl_p, tail, pri, sm, rows, touch,
                                                new_q, shared, plans, flushes)
                if err != 0:
                    failed[0] = err
                    return DRIVER, g
        if gen % swapfreq == 0 and ranks.shape[1] > 1:
            c_ahead = bounds[1] if ahead else 0
            if swap_runs(draws[gen // swapfreq - row0], *swap_args, c_ahead):
                err = _drop(0, bounds, plans, flushes, rng, rng_out)     # made with the old tuning: again
                if err == 0:
                    ahead, stop, err = _start_ahead(bounds, head, pars, ck, cpars, brl_p, tail, pri, sm, rows,
                                                    touch, new_q, shared, plans, flushes)
                if err != 0:
                    failed[0] = err
                    return DRIVER, g + 1
            _heats(ranks, temp, heats)
        if stop:
            return HOST_MODEL, g + 1
    return DONE, n_gen


class DeviceBlockRunner(BlockRunner):
    """core.block.BlockRunner for chains whose pattern sets are all on a CUDA device with compiled flushes:
    run_device_block in place of run_block, one thread (ParsSPR's Fitch pass on its own threads)."""

    # On since session 51 (run on one H200 and two: the GPU tests and mpi_scaling's files, docs/performance.md);
    # a class setting so benchmarks and tests can compare with the per-generation path.
    enabled = True

    @classmethod
    def takes(cls, core) -> bool:
        """Whether this core's generations can go in device blocks: every pattern set on a device with
        compiled flushes and no host share (coding=variable), no CPP clock (its rows widen between
        generations), and the chains in groups."""
        ds = core.divisions
        on_device = all(isinstance(d, DeviceDivision) and d.flushes is not None and not d.unobserved_weight
                        for d in ds)
        return cls.enabled and bool(ds) and on_device and (core.clock is None or core.ck.relaxed != CPP)

    def __init__(self, core, runs: list[int], nchains: int):
        super().__init__(core, runs, nchains)
        self.pars = core.pars[0]
        n = core.lnl.size
        k = core.groups if n >= core.groups else 1
        self.bounds = np.array([n * g // k for g in range(k + 1)], dtype=np.int64)

    def likelihood_args(self, core, rows) -> None:
        """Each pattern set's planning arrays and its compiled flushes' buffers (two groups in flight)."""
        self.plans = typed_list(tuple(
            (d.todo,) + _tree_rows(core.view(j)) + (d.bslot, d.mslot, d.bslot_p, d.mslot_p, d.n_tips, d.lanes,
                                                    d.geometry) + r + tuple(d.scratch) + (d.sizes,)
            for j, (d, r) in enumerate(zip(core.divisions, rows))))
        self.flushes = typed_list(tuple(d.flushes.block_args(d.lnl_p) for d in core.divisions))

    def generations(self, job) -> None:
        """The block in compiled calls on this thread; a generation whose model must come from the host by
        the per-generation step (CoreStepper.step) between them."""
        core, o = self.core, job.opts
        core.drop_ahead()
        for d in core.divisions:
            d.flushes.ready_for_block()
        pri, sm, rows, touch, new_q = self.plan
        ranks, n_runs, gen = job.swap[0], job.swap[0].shape[0], job.first
        with core.divisions[0].backend.dev:
            while gen <= job.last:
                numba.set_num_threads(core.pars_threads)
                try:
                    status, done = run_device_block(
                        job.last - gen + 1, gen, job.swapfreq, job.row0, job.draws, self.bounds, self.head, self.pars,
                        core.ck, core.cpars, core.brl_p, self.tail, pri, sm, rows, touch, new_q, self.plans,
                        self.flushes, job.dec, self.keep, job.swap, self.shared, job.heats, self.failed)
                finally:
                    numba.set_num_threads(core.threads)
                if status == DONE:
                    return
                self._stopped(status)
                gen += done                       # HOST_MODEL: this generation by the per-generation step
                self.need[:] = False
                core.step(job.heats, o.tunefreq, o.autotune, o.power)
                core.drop_ahead()
                if gen % job.swapfreq == 0 and ranks.shape[1] > 1:
                    swap_heats(job.draws[gen // job.swapfreq - job.row0], *job.swap, 0, n_runs)
                    _heats(ranks, job.swap[1], job.heats)
                gen += 1

    def _stopped(self, status: int) -> None:
        """Raise for a block that stopped on an error."""
        if status == BAD_LNL:
            self.core.proposal_error(int(self.failed[0]))
        if status == DRIVER:
            code = int(self.failed[0])
            raise DeviceError("the invariant-site table was missing in a compiled block" if code == NO_TABLE else
                              "CUDA driver error %d in a compiled block of generations" % code)


def _tree_rows(tv) -> tuple:
    return tv.parent_p, tv.kids_p, tv.brlen_p, tv.parent, tv.brlen
