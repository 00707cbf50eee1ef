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
from mbgpu.clock.pars_spr_clock import pars_spr_clock
from mbgpu.clock.relaxed_state import in_bounds
from mbgpu.clock.topology_moves import ext_spr_clock, nni_clock
from mbgpu.core.branch_moves import autotune_multiplier_within
from mbgpu.errors import NotImplementedYet
from mbgpu.moves.base import Move, aborted, make_proposal

def kernel_state(rng: np.random.Generator) -> np.ndarray:
    """A fresh xoshiro256** state (uint64[4], never all zero) from four raw words of the chain's stream."""
    s = np.asarray(rng.bit_generator.random_raw(4), dtype=np.uint64)
    if not s.any():
        s[0] = 1
    return s


class ClockMove(Move):
    """A clock move as mbgpu.clock.move_table lists it (`chain_move` sets weight, tuning, target and
    ranges from its ClockMoveSpec): `tuned` is the tuning value autotuning changes (None: not tuned), by
    MrBayes' rule (mbgpu.core.branch_moves.autotune_multiplier_within, the compiled core's too), kept
    strictly inside its range."""

    tuned: str | None = None
    ranges: dict = {}
    keeps_constraints = True      # the kernels never break a locked (constrained) node's clade

    def tune(self, acceptance_rate: float) -> None:
        if self.target is None or self.tuned is None:
            return
        self.batches += 1
        self.tuning[self.tuned] = autotune_multiplier_within(self.tuning[self.tuned], acceptance_rate, self.target,
                                                             self.batches, *self.ranges[self.tuned])


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
        return tree_proposal(tree, tree.moved(parent, kids, depth), r)


def tree_proposal(tree, new, log_ratio: float):
    """make_proposal of a tree move, or MrBayes' abort when a relaxed clock's effective length (rates stay
    with their nodes) left [RELBRLENS_MIN, RELBRLENS_MAX] (the igr / tk02 blocks of the tree moves)."""
    if new.relaxed is not None and not in_bounds(new.state.brlen, new.state.parent, new.eff):
        return aborted(tree)
    return make_proposal(tree, new, log_ratio)


class NodesliderClock(_DepthMove):
    name = "NodesliderClock"


    def _kernel(self, s, w, lo, hi, ctx):
        return tm.node_slider_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["delta"])


class TreeStretch(_DepthMove):
    name = "TreeStretch"


    def _kernel(self, s, w, lo, hi, ctx):
        return tm.tree_stretch(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["lambda"])


class ExtSprClock(_DepthMove):
    name = "ExtSprClock"


    def _kernel(self, s, w, lo, hi, ctx):
        return ext_spr_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["p_ext"])


class NNIClock(_DepthMove):
    name = "NNIClock"

    def _kernel(self, s, w, lo, hi, ctx):
        return nni_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, 0.0)


class ParsSPRClock(_DepthMove):
    """ParsSPRClock: the data's Fitch sets (mbgpu.core.pars_spr.prepare_pars_data) are prepared once per
    move context and shared by its chains."""

    name = "ParsSPRClock"


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

    name = "Multiplier"


    def propose(self, tree, rng, ctx):
        st = tree.state
        rate, depth = np.array([st.clock_rate]), st.depth.copy()
        r = pm.clock_rate_multiplier(kernel_state(rng), rate, st.parent, depth, self.tuning["lambda"],
                                     np.zeros(0, dtype=np.int64))
        if not r > -math.inf:
            return aborted(tree)
        return tree_proposal(tree, tree.moved(st.parent, st.kids, depth, float(rate[0])), r)


class _ParamMove(ClockMove):
    """A move of one tree-prior parameter (`param`: its label in ClockTree.params) within `bounds(model)`."""

    param = ""

    def bounds(self, model) -> tuple[float, float]:
        return 0.0, math.inf

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
    name, param = "Multiplier", "net_speciation"


    def bounds(self, model) -> tuple[float, float]:
        return _bounds(model.speciation, pm.SPECIATION_MIN, pm.SPECIATION_MAX)

    def _kernel(self, s, values, model):
        return pm.speciation_multiplier(s, values, self.tuning["lambda"], *self.bounds(model))


class ExtinctionSlider(_ParamMove):
    name, param = "Slider", "relative_extinction"


    def _kernel(self, s, values, model):
        return pm.extinction_slider(s, values, self.tuning["delta"])


class PopsizeMultiplier(_ParamMove):
    name, param = "Multiplier", "popsize"


    def bounds(self, model) -> tuple[float, float]:
        return _bounds(model.popsize, pm.POPSIZE_MIN, pm.POPSIZE_MAX)

    def _kernel(self, s, values, model):
        return pm.popsize_multiplier(s, values, self.tuning["lambda"], *self.bounds(model))



KINDS = {"extspr": ExtSprClock, "nni": NNIClock, "parsspr": ParsSPRClock, "nodeslider": NodesliderClock,
         "treestretch": TreeStretch, "clockrate": ClockRateMultiplier, "speciation": SpeciationMultiplier,
         "extinction": ExtinctionSlider, "popsize": PopsizeMultiplier}


def chain_move(spec) -> ClockMove | None:
    """The chain move of a mbgpu.clock.move_table.ClockMoveSpec, with its weight, tuning, target and ranges;
    None for a weight-0 move without a chain move here (propset refuses to switch those on).

    Raises:
        NotImplementedYet: a move MrBayes uses by default that the sampler does not run yet.
    """
    from mbgpu.clock.chain_fbd_moves import KINDS as FBD_KINDS          # both build on this module's classes:
    from mbgpu.clock.chain_relaxed_moves import RELAXED_KINDS            # imported late
    from mbgpu.clock.chain_cpp_moves import CPP_KINDS

    cls = KINDS.get(spec.kind) or RELAXED_KINDS.get(spec.kind) or FBD_KINDS.get(spec.kind) or CPP_KINDS.get(spec.kind)
    if cls is None:
        if spec.weight == 0:
            return None
        raise NotImplementedYet("the clock move %s is not supported yet" % spec.name)
    move = cls()
    move.tuning = dict(spec.tuning)
    move.weight, move.target, move.ranges = spec.weight, spec.target, dict(spec.ranges)
    move.tuned = next(iter(spec.tuning)) if spec.target is not None and spec.tuning else None
    return move
