"""MrBayes 3.2.7a's clock moves as the sampler's tree moves: each wraps a kernel of mbgpu.clock (which
changes rooted arrays in place and returns the log proposal ratio) and proposes a new ClockTree
(mbgpu.clock.chain_tree) from a chain's current one, as mbgpu.moves' moves propose Trees.

A kernel draws from a xoshiro256** state (mbgpu.core.rng) seeded from the chain's own stream at each
proposal (four raw words), so a chain's draws stay a function of its numpy stream alone and checkpoints
need nothing new. The caller adds the prior ratio (ClockTree.ln_prior) and the likelihood ratio.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.clock import param_moves as pm
from mbgpu.clock import tree_moves as tm
from mbgpu.clock.pars_spr_clock import PARSSPRCLOCK_WARP, PARSSPRCLOCK_WEIGHT, pars_spr_clock
from mbgpu.clock.topology_moves import ext_spr_clock, nni_clock
from mbgpu.moves.base import Move, aborted, make_proposal

TUNING_MIN, TUNING_MAX = 1e-4, 20.0      # AutotuneSlider / AutotuneMultiplier's window (mbgpu.moves.base)


def kernel_state(rng: np.random.Generator) -> np.ndarray:
    """A fresh xoshiro256** state (uint64[4], never all zero) from four raw words of the chain's stream."""
    s = np.asarray(rng.bit_generator.random_raw(4), dtype=np.uint64)
    if not s.any():
        s[0] = 1
    return s


class ClockMove(Move):
    """A clock move: `tuned` names the tuning value autotuning changes (None: not tuned), with MrBayes'
    rule exp(+-min(0.01, 1/sqrt(batch))) inside (TUNING_MIN, TUNING_MAX)."""

    tuned: str | None = None

    def tune(self, acceptance_rate: float) -> None:
        if self.target is None or self.tuned is None:
            return
        self.batches += 1
        delta = min(0.01, 1.0 / math.sqrt(self.batches))
        new = self.tuning[self.tuned] * math.exp(delta if acceptance_rate > self.target else -delta)
        if TUNING_MIN < new < TUNING_MAX:
            self.tuning[self.tuned] = new


class _DepthMove(ClockMove):
    """A move of the rooted arrays (parent, kids, depth) within the depth bounds of the calibrations."""

    def _kernel(self, s, st, lo, hi, ctx):
        raise NotImplementedError

    def propose(self, tree, rng, ctx):
        st = tree.state
        parent, kids, depth = st.parent.copy(), st.kids.copy(), st.depth.copy()
        lo, hi = tree.frame.depth_bounds(st)
        work = type(st)(parent, kids, depth, st.n_tips, st.cal_kind, st.cal_params, st.locked, st.clock_rate)
        r = self._kernel(kernel_state(rng), work, lo, hi, ctx)
        if not r > -math.inf:
            return aborted(tree)
        return make_proposal(tree, tree.moved(parent, kids, depth), r)


class NodesliderClock(_DepthMove):
    name, weight, target, tuned = "NodesliderClock", tm.NODESLIDER_WEIGHT, tm.NODESLIDER_TARGET, "delta"

    @classmethod
    def default_tuning(cls):
        return {"delta": tm.NODESLIDER_DELTA}

    def _kernel(self, s, w, lo, hi, ctx):
        return tm.node_slider_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["delta"])


class TreeStretch(_DepthMove):
    name, weight, target, tuned = "TreeStretch", tm.TREESTRETCH_WEIGHT, tm.TREESTRETCH_TARGET, "lambda"

    @classmethod
    def default_tuning(cls):
        return {"lambda": tm.TREESTRETCH_LAMBDA}

    def _kernel(self, s, w, lo, hi, ctx):
        return tm.tree_stretch(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["lambda"])


class ExtSprClock(_DepthMove):
    name, weight = "ExtSprClock", tm.EXTSPR_WEIGHT

    @classmethod
    def default_tuning(cls):
        return {"p_ext": tm.EXTSPR_P_EXT}

    def _kernel(self, s, w, lo, hi, ctx):
        return ext_spr_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["p_ext"])


class NNIClock(_DepthMove):
    name, weight = "NNIClock", tm.NNI_WEIGHT

    def _kernel(self, s, w, lo, hi, ctx):
        return nni_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, 0.0)


class ParsSPRClock(_DepthMove):
    """ParsSPRClock: the data's Fitch sets (mbgpu.core.pars_spr.prepare_pars_data) are prepared once per
    move context and shared by its chains."""

    name, weight = "ParsSPRClock", PARSSPRCLOCK_WEIGHT

    @classmethod
    def default_tuning(cls):
        return {"warp": PARSSPRCLOCK_WARP}

    def _kernel(self, s, w, lo, hi, ctx):
        return pars_spr_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["warp"],
                              *_pars_data(ctx))


def _pars_data(ctx) -> tuple:
    from mbgpu.core.pars_spr import prepare_pars_data

    data = ctx.prepared.get("pars_spr_clock")
    if data is None:
        data = ctx.prepared["pars_spr_clock"] = prepare_pars_data(ctx.pattern_masks, ctx.n_states, None, ctx.n_tips)
    return data


class ClockRateMultiplier(ClockMove):
    """Multiplier(Clockrate): the rate and every depth by one factor (ages stay)."""

    name, weight, target, tuned = "Multiplier", pm.CLOCKRATE_WEIGHT, pm.CLOCKRATE_TARGET, "lambda"

    @classmethod
    def default_tuning(cls):
        return {"lambda": pm.CLOCKRATE_LAMBDA}

    def propose(self, tree, rng, ctx):
        st = tree.state
        rate, depth = np.array([st.clock_rate]), st.depth.copy()
        r = pm.clock_rate_multiplier(kernel_state(rng), rate, st.parent, depth, self.tuning["lambda"],
                                     np.zeros(0, dtype=np.int64))
        if not r > -math.inf:
            return aborted(tree)
        return make_proposal(tree, tree.moved(st.parent, st.kids, depth, float(rate[0])), r)


class _ParamMove(ClockMove):
    """A move of one tree-prior parameter (`param`: its label in ClockTree.params)."""

    param = ""

    def _kernel(self, s, values, model):
        raise NotImplementedError

    def propose(self, tree, rng, ctx):
        values = tree.params[self.param].copy()
        r = self._kernel(kernel_state(rng), values, tree.frame.model)
        if not r > -math.inf:
            return aborted(tree)
        st = tree.state
        return make_proposal(tree, tree.moved(st.parent, st.kids, st.depth, None,
                                              {**tree.params, self.param: values}), r)


def _bounds(prior, lo: float, hi: float) -> tuple[float, float]:
    """A parameter's move bounds: its uniform prior's range, else MrBayes' defaults."""
    return (float(prior.params[0]), float(prior.params[1])) if prior.family == "Uniform" else (lo, hi)


class SpeciationMultiplier(_ParamMove):
    name, weight, target, tuned, param = "Multiplier", pm.SPECIATION_WEIGHT, pm.SPECIATION_TARGET, "lambda", \
        "net_speciation"

    @classmethod
    def default_tuning(cls):
        return {"lambda": pm.SPECIATION_LAMBDA}

    def _kernel(self, s, values, model):
        lo, hi = _bounds(model.speciation, pm.SPECIATION_MIN, pm.SPECIATION_MAX)
        return pm.speciation_multiplier(s, values, self.tuning["lambda"], lo, hi)


class ExtinctionSlider(_ParamMove):
    name, weight, target, tuned, param = "Slider", pm.EXTINCTION_WEIGHT, pm.EXTINCTION_TARGET, "delta", \
        "relative_extinction"

    @classmethod
    def default_tuning(cls):
        return {"delta": pm.EXTINCTION_DELTA}

    def _kernel(self, s, values, model):
        return pm.extinction_slider(s, values, self.tuning["delta"])


class PopsizeMultiplier(_ParamMove):
    name, weight, target, tuned, param = "Multiplier", pm.POPSIZE_WEIGHT, pm.POPSIZE_TARGET, "lambda", "popsize"

    @classmethod
    def default_tuning(cls):
        return {"lambda": pm.POPSIZE_LAMBDA}

    def _kernel(self, s, values, model):
        lo, hi = _bounds(model.popsize, pm.POPSIZE_MIN, pm.POPSIZE_MAX)
        return pm.popsize_multiplier(s, values, self.tuning["lambda"], lo, hi)

