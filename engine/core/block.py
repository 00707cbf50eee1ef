"""Several generations in one compiled call, for a run whose chains the core steps on the CPU with one
pattern set: propose, parameter models and priors, likelihoods, decisions and heat swaps of every
generation until the loop next has something to do (a sample, a screen line, a diagnostic, a
checkpoint). A generation costs ~300 us of compiled work on small data (primates); the interpreted loop
around it cost ~60 us more, which this removes. With several threads the runs are shared out: runs
meet only at heat swaps within a run, so each thread's runs go through the whole block on their own,
with the swap stream's draws taken beforehand. The draws, the order of work and so the files are those
of the per-generation path (mbgpu.core.stepper.CoreStepper.step and MC3.swap_all) for any thread
count; tests compare them.
"""
from __future__ import annotations

import gc
import math
import threading

import numba
import numpy as np

from mbgpu.core.division import DivisionArrays, evaluate_range, keep_division
from mbgpu.core.models import model_proposal, param_log_prior
from mbgpu.core.step import decide_all, propose_chain
from mbgpu.jit import JIT_OPTIONS

DONE, BAD_LNL, HOST_MODEL = 0, 1, 2     # how a block ended


@numba.njit(**JIT_OPTIONS)
def swap_heats(draws, ranks, temp, nswaps, tried, accepted, lnl, lnpr, r0, r1):
    """MC3.swap_all over arrays for runs r0 <= r < r1: nswaps heat swaps per run (ranks[r, position] =
    heat rank; chain r * nchains + position), run r's swap s from draws[3 (r nswaps + s) ...] (one
    generation's draws of the swap stream for every run), as mbgpu.sampler.swaps.swap_with."""
    n = ranks.shape[1]
    if n < 2:
        return
    for r in range(r0, r1):
        for s in range(nswaps):
            i = 3 * (r * nswaps + s)
            d0, d1, d2 = draws[i], draws[i + 1], draws[i + 2]
            a = min(int(d0 * n), n - 1)
            b = min(int(d1 * (n - 1)), n - 2)
            if b >= a:
                b += 1
            ra, rb = ranks[r, a], ranks[r, b]
            ca, cb = r * n + a, r * n + b
            log_r = (1.0 / (1.0 + temp * rb) - 1.0 / (1.0 + temp * ra)) * ((lnl[ca] + lnpr[ca]) - (lnl[cb] + lnpr[cb]))
            ok = log_r >= 0 or math.log(d2) < log_r
            i, j = (ra, rb) if ra < rb else (rb, ra)
            tried[r, j, i] += 1
            tried[r, i, j] += 1
            if ok:
                accepted[r, i, j] += 1
                ranks[r, a], ranks[r, b] = rb, ra


@numba.njit(**JIT_OPTIONS)
def _heats(ranks, temp, heats, r0, r1):
    n = ranks.shape[1]
    for r in range(r0, r1):
        for p in range(n):
            heats[r * n + p] = 1.0 / (1.0 + temp * ranks[r, p])


@numba.njit(**JIT_OPTIONS)
def _plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo):
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
def _chain_generation(c, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, dec_args, keep_rows, shared):
    """One generation of chain c (propose, plan, evaluate, decide, keep): DONE, BAD_LNL (its proposal's
    lnL is NaN or +inf; undecided) or HOST_MODEL (proposed and planned; its model must come from the
    host). Reads and writes only chain c's rows, so chains may run on threads."""
    rng, rng_out, todo, moved, off, theta_p, pterm_new, accepted, log_h = shared
    todo[:, c] = 0
    propose_chain(c, *head, pars, *tail)
    if moved[c] >= 0 and log_h[c] != -math.inf:
        if not _plan_chain(c, theta_p, moved, off, pri, sm, rows, touch, new_q, pterm_new, todo):
            return HOST_MODEL
    evaluate_range(c, c + 1, todo[0], *eval_args)
    if decide_all(*dec_args, c, c + 1) >= 0:
        return BAD_LNL
    keep_division(c, c + 1, todo[0], accepted, *keep_rows)
    rng_out[c] = rng[c]
    return DONE


@numba.njit(parallel=True, **JIT_OPTIONS)
def _chains_parallel(c0, c1, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, dec_args, keep_rows, shared,
                     status):
    """_chain_generation for chains c0..c1-1 on numba's threads (every argument a flat tuple: numba's
    parallel loops take no nested ones)."""
    for i in numba.prange(c1 - c0):
        status[i] = _chain_generation(c0 + i, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, dec_args,
                                      keep_rows, shared)


@numba.njit(**JIT_OPTIONS)
def run_block(n_gen, first_gen, swapfreq, c0, c1, r0, r1, row0, draws, threads, head, pars, tail, pri, sm, rows,
              touch, new_q, eval_args, dec_args, keep_rows, swap_args, shared, heats, status, failed):
    """Generations first_gen .. first_gen + n_gen - 1 of chains c0..c1-1 (runs r0..r1-1; on `threads`
    of numba's threads when more than one), heat swaps after those that are multiples of swapfreq
    (generation g's swap draws: row g // swapfreq - row0). Returns (status, generations completed,
    chains in `failed`): DONE; BAD_LNL (`failed[0]`'s proposal gave a NaN or +inf lnL); HOST_MODEL
    (in the generation after those completed, the chains in `failed` have proposed and planned but
    need their model from the host; the others have finished it). Only these chains' and runs' rows
    are read and written."""
    ranks, temp, nswaps, tried, sw_acc, lnl, lnpr = swap_args
    for g in range(n_gen):
        if threads > 1:
            _chains_parallel(c0, c1, head, pars, tail, pri, sm, rows, touch, new_q, eval_args, dec_args, keep_rows,
                             shared, status)
        else:
            for c in range(c0, c1):
                status[c - c0] = _chain_generation(c, head, pars, tail, pri, sm, rows, touch, new_q, eval_args,
                                                   dec_args, keep_rows, shared)
        nf = 0
        for i in range(c1 - c0):
            if status[i] == BAD_LNL:
                failed[0] = c0 + i
                return BAD_LNL, g, 1
            if status[i] == HOST_MODEL:
                failed[nf] = c0 + i
                nf += 1
        if nf:
            return HOST_MODEL, g, nf
        gen = first_gen + g
        if gen % swapfreq == 0 and ranks.shape[1] > 1:
            swap_heats(draws[gen // swapfreq - row0], ranks, temp, nswaps, tried, sw_acc, lnl, lnpr, r0, r1)
            _heats(ranks, temp, heats, r0, r1)
    return DONE, n_gen, 0


class _Share:
    """One Python thread's share of a block: runs r0..r1-1, i.e. chains c0..c1-1, on `threads` of
    numba's threads (its chains in parallel each generation), with its own status and failure lists
    and ParsSPR's Fitch pass on one thread (the chains are what runs in parallel)."""

    def __init__(self, core, r0: int, r1: int, nchains: int, threads: int):
        self.r0, self.r1, self.c0, self.c1 = r0, r1, r0 * nchains, r1 * nchains
        self.threads = max(1, min(threads, self.c1 - self.c0))
        self.status = np.zeros(self.c1 - self.c0, dtype=np.int64)
        self.failed = np.zeros(self.c1 - self.c0, dtype=np.int64)
        self.pars = core.pars[:-1] + (np.ones(1, dtype=np.uint64),)


def share_out(threads: int, nruns: int, nested: bool) -> list[tuple[int, int, int]]:
    """(first run, end run, numba threads) of each Python thread: the runs split over up to `threads`
    Python threads and the threads left over to their chains; without `nested` parallel regions
    (numba's workqueue layer cannot run two at once), one numba thread each when there are several."""
    k = max(1, min(threads, nruns))
    out = []
    for i in range(k):
        t = threads // k + (1 if i < threads % k else 0)
        out.append((nruns * i // k, nruns * (i + 1) // k, t if (nested or k == 1) else 1))
    return out


class BlockRunner:
    """Runs an MC3's generations in compiled blocks when its chains' core allows (`for_mc3`): the runs
    split over up to numba's thread count of Python threads (compiled code releases the GIL), the
    threads left over running a share's chains in parallel. Runs meet only in the swap stream, whose
    draws for the block are taken beforehand in the loop's order, so the files do not depend on the
    thread count."""

    def __init__(self, core, nruns: int, nchains: int):
        self.core = core
        d, pt, sm, t, mv = core.divisions[0], core.priors, core.set_models[0], core.trees, core.moves
        self.rows = (d.evals, d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar, d.mult)
        self.plan = ((pt.kind, pt.args, pt.alphas, pt.weights), (sm.desc, sm.fixed, sm.s0, sm.pi0), self.rows,
                     np.array([bool(j) for j in core.touches], dtype=np.bool_), np.array(core.new_q, dtype=np.bool_))
        self.head = (core.rng, t.parent, t.kids, t.brlen, core.theta, t.parent_p, t.kids_p, t.brlen_p, core.theta_p,
                     mv.kind, mv.param, mv.cdf, mv.bounds, mv.scale, mv.tuning, core.layout.off, core.n_tips,
                     core.lo, core.hi, core.anchor)
        self.tail = (core.move_of, core.log_h, core.moved, core.todo)
        self.eval = (t.parent_p, t.kids_p, t.brlen_p, t.parent, t.brlen, d.bslot, d.mslot, d.bslot_p, d.mslot_p,
                     d.n_tips) + self.rows + (d.partials, d.tip_x, d.matrices, d.scale, d.scaled, d.weights,
                                              d.compat, d.lnl_p) + tuple(d.scratch)
        self.keep = (d.bslot, d.mslot, d.bslot_p, d.mslot_p, d.lnl, d.lnl_p) + self.rows
        self.shared = (core.rng, core.rng_out, core.todo, core.moved, core.layout.off, core.theta_p, core.pterm_new,
                       core.accepted, core.log_h)
        nested = _layer() != "workqueue"
        self.shares = [_Share(core, r0, r1, nchains, n)
                       for r0, r1, n in share_out(numba.get_num_threads(), nruns, nested)]

    @staticmethod
    def for_mc3(mc3):
        """A BlockRunner for `mc3`'s chains; None while the core is not built; False where generations go
        one by one: on a GPU, under MPI, several pattern sets, a model or prior the core builds on the
        host."""
        if not mc3.compiled_blocks:
            return False
        held = mc3.runs[0][0]._core
        if held is None:
            return None
        core = held[0]
        if len(core.divisions) != 1:
            return False
        d = core.divisions[0]
        if (type(d) is not DivisionArrays or d.sum_each is not None
                or core.groups != 1 or not core.priors.ok or core.set_models[0] is None):
            return False
        return BlockRunner(core, len(mc3.runs), mc3.opts.nchains)

    def run(self, mc3, first: int, last: int) -> int:
        """Generations first..last of mc3 (a chain whose model must come from the host gets it between
        two compiled calls); returns last."""
        core, o = self.core, mc3.opts
        ranks = np.array(mc3.ranks, dtype=np.int64)
        tried = np.array([t.tried for t in mc3.swaps], dtype=np.int64)
        sw_acc = np.array([t.accepted for t in mc3.swaps], dtype=np.int64)
        heats = core.heats_for(mc3.ranks, o.temp).copy()
        row0 = (first - 1) // o.swapfreq + 1
        rows = last // o.swapfreq - row0 + 1 if o.nchains > 1 else 0
        draws = mc3.swap_rng.random((rows, 3 * o.nswaps * len(mc3.runs)))     # swap_all's, in its order
        job = _Job(first, last, int(o.swapfreq), row0, draws, heats, core.decide_args(heats, o.tunefreq, o.autotune),
                   (ranks, float(o.temp), int(o.nswaps), tried, sw_acc, core.lnl, core.lnpr), o)
        errors = [None] * len(self.shares)
        threads = [threading.Thread(target=self._guarded, args=(share, job, errors, i))
                   for i, share in enumerate(self.shares[1:], 1)]
        collecting = gc.isenabled()
        if threads:       # no cyclic collection on the other threads: a CUDA object collected there has no context
            gc.disable()
        for th in threads:
            th.start()
        try:
            self._guarded(self.shares[0], job, errors, 0)
        finally:
            for th in threads:
                th.join()
            if collecting:
                gc.enable()
        for r, row in enumerate(ranks.tolist()):
            mc3.ranks[r][:] = row
        for table, t, a in zip(mc3.swaps, tried.tolist(), sw_acc.tolist()):
            table.tried, table.accepted = t, a
        core.publish()
        for e in errors:
            if e is not None:
                raise e
        return last

    def _guarded(self, share, job, errors, i) -> None:
        """_work on this Python thread with the share's count of numba threads (numba's count is per
        thread); an error is kept for run() to raise once every thread has ended."""
        before = numba.get_num_threads()
        numba.set_num_threads(share.threads)
        try:
            self._work(share, job)
        except Exception as e:
            errors[i] = e
        finally:
            numba.set_num_threads(before)

    def _work(self, share, job) -> None:
        """One share's generations of the block; a chain's model the core cannot build is built here, on
        the host, and that chain's generation finished as CoreStepper.step would."""
        core, o, gen, (pri, sm, rows, touch, new_q) = self.core, job.opts, job.first, self.plan
        while gen <= job.last:
            status, done, nf = run_block(job.last - gen + 1, gen, job.swapfreq, share.c0, share.c1, share.r0,
                                         share.r1, job.row0, job.draws, share.threads, self.head, share.pars,
                                         self.tail, pri, sm, rows, touch, new_q, self.eval, job.dec, self.keep,
                                         job.swap, self.shared, job.heats, share.status, share.failed)
            if status == DONE:
                return
            if status == BAD_LNL:
                core.proposal_error(int(share.failed[0]))
            gen += done                            # HOST_MODEL: finish those chains' generation
            for c in share.failed[:nf].tolist():
                core.host_model(c, 0)
                evaluate_range(c, c + 1, core.todo[0], *self.eval)
                core.finish(job.heats, o.tunefreq, o.autotune, c, c + 1)
            ranks = job.swap[0]
            if gen % job.swapfreq == 0 and ranks.shape[1] > 1:
                swap_heats(job.draws[gen // job.swapfreq - job.row0], *job.swap, share.r0, share.r1)
                _heats(ranks, job.swap[1], job.heats, share.r0, share.r1)
            gen += 1


def _layer() -> str:
    """numba's threading layer (its pool is started by CoreStepper; "workqueue" where it is not)."""
    try:
        return numba.threading_layer()
    except ValueError:
        return "workqueue"


class _Job:
    """What every share of one block reads: its generations, the swap draws, heats and arrays."""

    def __init__(self, first, last, swapfreq, row0, draws, heats, dec, swap, opts):
        self.first, self.last, self.swapfreq, self.row0, self.draws = first, last, swapfreq, row0, draws
        self.heats, self.dec, self.swap, self.opts = heats, dec, swap, opts
