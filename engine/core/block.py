"""Several generations in one compiled call, for a serial run whose chains the core steps on one CPU
thread with one pattern set: propose, parameter models and priors, likelihoods, decisions and heat swaps
of every generation until the loop next has something to do (a sample, a screen line, a diagnostic,
a checkpoint). A generation costs ~300 us of compiled work on small data (primates); the interpreted
loop around it cost ~60 us more, which this removes. The draws, the order of work and so the files
are those of the per-generation path (mbgpu.core.stepper.CoreStepper.step and MC3.swap_all); a test
compares the two.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.core.division import DivisionArrays, evaluate_serial, keep_division
from mbgpu.core.models import model_proposal, param_log_prior
from mbgpu.core.step import decide_all, propose_all
from mbgpu.jit import JIT_OPTIONS

DONE, BAD_LNL, HOST_MODEL = 0, 1, 2     # how a block ended


@numba.njit(**JIT_OPTIONS)
def swap_heats(swap_rng, ranks, temp, nswaps, tried, accepted, lnl, lnpr):
    """MC3.swap_all over arrays: nswaps heat swaps per run (ranks[r, position] = heat rank; chain r *
    nchains + position), each from three uniforms of the swap stream, as mbgpu.sampler.swaps.swap_with."""
    n = ranks.shape[1]
    if n < 2:
        return
    for r in range(ranks.shape[0]):
        for _ in range(nswaps):
            d0, d1, d2 = swap_rng.random(), swap_rng.random(), swap_rng.random()
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
def _heats(ranks, temp, heats):
    n = ranks.shape[1]
    for r in range(ranks.shape[0]):
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
def run_block(n_gen, first_gen, swapfreq, prop_args, plan_args, eval_args, dec_args, keep_rows, swap_args, shared,
              failed):
    """Generations first_gen .. first_gen + n_gen - 1 of every chain, heat swaps after those that are
    multiples of swapfreq. Returns (status, generations completed, chains in `failed`): DONE; BAD_LNL
    (`failed[0]`'s proposal gave a NaN or +inf lnL; that generation undecided); HOST_MODEL (the
    generation after those completed has proposed and planned, but the chains in `failed` need their
    model from the host before it is evaluated and decided)."""
    rng, rng_out, todo, by_param, moved, off, theta_p, pterm_new, heats, accepted = shared
    swap_rng, ranks, temp, nswaps, tried, sw_acc, lnl, lnpr = swap_args
    n = rng.shape[0]
    for g in range(n_gen):
        n_param = propose_all(*prop_args, 0, n)
        nf = 0
        if n_param:
            nf = _plan(theta_p, by_param, moved, off, n_param, *plan_args, pterm_new, todo, failed)
        if nf:
            return HOST_MODEL, g, nf
        evaluate_serial(todo[0], *eval_args)
        bad = decide_all(*dec_args, 0, n)
        if bad >= 0:
            failed[0] = bad
            return BAD_LNL, g, 1
        keep_division(0, n, todo[0], accepted, *keep_rows)
        rng_out[:] = rng
        if (first_gen + g) % swapfreq == 0:
            swap_heats(swap_rng, ranks, temp, nswaps, tried, sw_acc, lnl, lnpr)
            _heats(ranks, temp, heats)
    return DONE, n_gen, 0


class BlockRunner:
    """Runs an MC3's generations in compiled blocks when its chains' core allows (`for_mc3`)."""

    def __init__(self, core):
        self.core = core
        d, t, mv, pt, sm = core.divisions[0], core.trees, core.moves, core.priors, core.set_models[0]
        self.prop = (core.rng, t.parent, t.kids, t.brlen, core.theta, t.parent_p, t.kids_p, t.brlen_p, core.theta_p,
                     mv.kind, mv.param, mv.cdf, mv.bounds, mv.scale, mv.tuning, core.layout.off, core.n_tips,
                     core.lo, core.hi, core.anchor, core.pars, core.move_of, core.log_h, core.moved, core.todo,
                     core.by_param)
        rows = (d.evals, d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar, d.mult)
        self.plan = ((pt.kind, pt.args, pt.alphas, pt.weights), (sm.desc, sm.fixed, sm.s0, sm.pi0), rows,
                     np.array([bool(j) for j in core.touches], dtype=np.bool_), np.array(core.new_q, dtype=np.bool_))
        self.eval = (t.parent_p, t.kids_p, t.brlen_p, t.parent, t.brlen, d.bslot, d.mslot, d.bslot_p, d.mslot_p,
                     d.n_tips) + rows + (d.partials, d.tip_x, d.matrices, d.scale, d.scaled, d.weights, d.compat,
                                         d.lnl_p) + tuple(d.scratch)
        self.keep = (d.bslot, d.mslot, d.bslot_p, d.mslot_p, d.lnl, d.lnl_p) + rows
        self.failed = np.zeros(len(core.chains), dtype=np.int64)

    @staticmethod
    def for_mc3(mc3):
        """A BlockRunner for `mc3`'s chains; None while the core is not built; False where generations go
        one by one: on a GPU or several threads, under MPI, several pattern sets, a model or prior the core
        builds on the host."""
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
                or core.groups != 1 or not core.priors.ok or core.set_models[0] is None
                or numba.get_num_threads() != 1):
            return False
        return BlockRunner(core)

    def run(self, mc3, first: int, last: int) -> int:
        """Generations first..last of mc3 (fewer if a chain's model must come from the host: that
        generation is finished here); returns the last generation completed."""
        core, o = self.core, mc3.opts
        ranks = np.array(mc3.ranks, dtype=np.int64)
        tried = np.array([t.tried for t in mc3.swaps], dtype=np.int64)
        sw_acc = np.array([t.accepted for t in mc3.swaps], dtype=np.int64)
        heats = core.heats_for(mc3.ranks, o.temp).copy()
        dec = core.decide_args(heats, o.tunefreq, o.autotune)
        shared = (core.rng, core.rng_out, core.todo, core.by_param, core.moved, core.layout.off, core.theta_p,
                  core.pterm_new, heats, core.accepted)
        swap = (mc3.swap_rng, ranks, float(o.temp), int(o.nswaps), tried, sw_acc, core.lnl, core.lnpr)
        status, done, nf = run_block(last - first + 1, first, int(o.swapfreq), self.prop, self.plan, self.eval, dec,
                                     self.keep, swap, shared, self.failed)
        for r, row in enumerate(ranks.tolist()):
            mc3.ranks[r][:] = row
        for table, t, a in zip(mc3.swaps, tried.tolist(), sw_acc.tolist()):
            table.tried, table.accepted = t, a
        core.publish()
        if status == DONE:
            return last
        if status == BAD_LNL:
            core.proposal_error(int(self.failed[0]))
        gen = first + done                          # HOST_MODEL: finish this generation as step() would
        for c in self.failed[:nf].tolist():
            core.host_model(c, 0)
        core.divisions[0].evaluate(core.trees)
        core.finish(core.heats_for(mc3.ranks, o.temp), o.tunefreq, o.autotune, 0, len(core.chains))
        core.publish()
        if gen % o.swapfreq == 0:
            mc3.swap_all()
        return gen
