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

import math
import threading

import numba
import numpy as np

from mbgpu.core.division import DivisionArrays, evaluate_range, keep_division
from mbgpu.core.models import model_proposal, param_log_prior
from mbgpu.core.step import decide_all, propose_all
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
def _plan(theta_p, by_param, moved, off, n_param, pri, sm, rows, touch, new_q, pterm_new, todo, failed):
    """The new models and prior terms of the chains whose parameter proposal is live (CoreStepper._plan
    for one pattern set); the chains whose model the core cannot compute go to `failed`; their count."""
    kind, args, alphas, weights = pri
    desc, fixed, s0, pi0 = sm
    nf = 0
    for i in range(n_param):
        c = by_param[i]
        k = moved[c]
        pterm_new[c] = param_log_prior(kind[k], args[k], alphas[k], weights[k], theta_p[c, off[k]:off[k + 1]])
        if touch[k]:
            if not model_proposal(theta_p[c], desc, fixed, s0, pi0, *rows, c, new_q[k]):
                failed[nf] = c
                nf += 1
            todo[0, c] = 2
    return nf


@numba.njit(**JIT_OPTIONS)
def run_block(n_gen, first_gen, swapfreq, c0, c1, r0, r1, row0, draws, prop_args, plan_args, eval_args, dec_args,
              keep_rows, swap_args, shared, failed):
    """Generations first_gen .. first_gen + n_gen - 1 of chains c0..c1-1 (runs r0..r1-1), heat swaps
    after those that are multiples of swapfreq (generation g's swap draws: row g // swapfreq - row0).
    Returns (status, generations completed, chains in `failed`): DONE; BAD_LNL (`failed[0]`'s
    proposal gave a NaN or +inf lnL; that generation undecided); HOST_MODEL (the generation after those
    completed has proposed and planned, but the chains in `failed` need their model from the host
    before it is evaluated and decided). Reads and writes only these chains' and runs' rows."""
    rng, rng_out, todo, by_param, moved, off, theta_p, pterm_new, heats, accepted = shared
    ranks, temp, nswaps, tried, sw_acc, lnl, lnpr = swap_args
    for g in range(n_gen):
        n_param = propose_all(*prop_args, c0, c1)
        nf = 0
        if n_param:
            nf = _plan(theta_p, by_param, moved, off, n_param, *plan_args, pterm_new, todo, failed)
        if nf:
            return HOST_MODEL, g, nf
        evaluate_range(c0, c1, todo[0], *eval_args)
        bad = decide_all(*dec_args, c0, c1)
        if bad >= 0:
            failed[0] = bad
            return BAD_LNL, g, 1
        keep_division(c0, c1, todo[0], accepted, *keep_rows)
        rng_out[c0:c1] = rng[c0:c1]
        gen = first_gen + g
        if gen % swapfreq == 0 and ranks.shape[1] > 1:
            swap_heats(draws[gen // swapfreq - row0], ranks, temp, nswaps, tried, sw_acc, lnl, lnpr, r0, r1)
            _heats(ranks, temp, heats, r0, r1)
    return DONE, n_gen, 0


class _Share:
    """One thread's share of a block: runs r0..r1-1, i.e. chains c0..c1-1, with its own list rows
    (`by_param`, `failed`) and ParsSPR on one thread (its numba threads would contend with the others)."""

    def __init__(self, core, r0: int, r1: int, nchains: int):
        self.r0, self.r1, self.c0, self.c1 = r0, r1, r0 * nchains, r1 * nchains
        t, mv = core.trees, core.moves
        self.by_param = core.by_param[self.c0:self.c1]
        self.failed = np.zeros(self.c1 - self.c0, dtype=np.int64)
        pars = core.pars[:-1] + (np.ones(1, dtype=np.uint64),)
        self.prop = (core.rng, t.parent, t.kids, t.brlen, core.theta, t.parent_p, t.kids_p, t.brlen_p, core.theta_p,
                     mv.kind, mv.param, mv.cdf, mv.bounds, mv.scale, mv.tuning, core.layout.off, core.n_tips,
                     core.lo, core.hi, core.anchor, pars, core.move_of, core.log_h, core.moved, core.todo,
                     self.by_param)


class BlockRunner:
    """Runs an MC3's generations in compiled blocks when its chains' core allows (`for_mc3`): the runs
    split over up to numba's thread count of Python threads (compiled code releases the GIL). Runs meet
    only in the swap stream, whose draws for the block are taken beforehand in the loop's order, so the
    files do not depend on the thread count."""

    def __init__(self, core, nruns: int, nchains: int):
        self.core = core
        d, pt, sm = core.divisions[0], core.priors, core.set_models[0]
        rows = (d.evals, d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar, d.mult)
        self.plan = ((pt.kind, pt.args, pt.alphas, pt.weights), (sm.desc, sm.fixed, sm.s0, sm.pi0), rows,
                     np.array([bool(j) for j in core.touches], dtype=np.bool_), np.array(core.new_q, dtype=np.bool_))
        t = core.trees
        self.eval = (t.parent_p, t.kids_p, t.brlen_p, t.parent, t.brlen, d.bslot, d.mslot, d.bslot_p, d.mslot_p,
                     d.n_tips) + rows + (d.partials, d.tip_x, d.matrices, d.scale, d.scaled, d.weights, d.compat,
                                         d.lnl_p) + tuple(d.scratch)
        self.keep = (d.bslot, d.mslot, d.bslot_p, d.mslot_p, d.lnl, d.lnl_p) + rows
        k = max(1, min(numba.get_num_threads(), nruns))
        self.shares = [_Share(core, nruns * i // k, nruns * (i + 1) // k, nchains) for i in range(k)]

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
        for th in threads:
            th.start()
        try:
            self._guarded(self.shares[0], job, errors, 0)
        finally:
            for th in threads:
                th.join()
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
        try:
            self._work(share, job)
        except Exception as e:        # re-raised by run() once every thread has ended
            errors[i] = e

    def _work(self, share, job) -> None:
        """One share's generations of the block; a chain's model the core cannot build is built here, on
        the host, and that generation finished as CoreStepper.step would."""
        core, o, gen = self.core, job.opts, job.first
        shared = (core.rng, core.rng_out, core.todo, share.by_param, core.moved, core.layout.off, core.theta_p,
                  core.pterm_new, job.heats, core.accepted)
        while gen <= job.last:
            status, done, nf = run_block(job.last - gen + 1, gen, job.swapfreq, share.c0, share.c1, share.r0,
                                         share.r1, job.row0, job.draws, share.prop, self.plan, self.eval, job.dec,
                                         self.keep, job.swap, shared, share.failed)
            if status == DONE:
                return
            if status == BAD_LNL:
                core.proposal_error(int(share.failed[0]))
            gen += done                            # HOST_MODEL: finish this generation as step() would
            for c in share.failed[:nf].tolist():
                core.host_model(c, 0)
            evaluate_range(share.c0, share.c1, core.todo[0], *self.eval)
            core.finish(job.heats, o.tunefreq, o.autotune, share.c0, share.c1)
            ranks = job.swap[0]
            if gen % job.swapfreq == 0 and ranks.shape[1] > 1:
                swap_heats(job.draws[gen // job.swapfreq - job.row0], *job.swap, share.r0, share.r1)
                _heats(ranks, job.swap[1], job.heats, share.r0, share.r1)
            gen += 1


class _Job:
    """What every share of one block reads: its generations, the swap draws, heats and arrays."""

    def __init__(self, first, last, swapfreq, row0, draws, heats, dec, swap, opts):
        self.first, self.last, self.swapfreq, self.row0, self.draws = first, last, swapfreq, row0, draws
        self.heats, self.dec, self.swap, self.opts = heats, dec, swap, opts
