"""MrBayes 3.2.7a's fossilized birth-death moves as the sampler's clock moves (mbgpu.clock.chain_moves):
AddBranch(V) / DelBranch(V) (mbgpu.clock.fbd_moves), ExtFossilSprClock(Tau,V) (mbgpu.clock.fossil_spr; weight 0
unless propset) and Slider(Relative_fossilization) (param_moves.fossilization_slider, one of the s+1 values
under fossil-sampling rate shifts).

The FBD kernels read each node's calibration (kind from the state, its age range from the ClockFrame), the
clock rate and treeagepr's range for an undated root; the caller adds the prior ratio (ClockTree.ln_prior).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.clock import param_moves as pm
from mbgpu.clock.chain_moves import ClockMove, _DepthMove, _ParamMove, kernel_state
from mbgpu.clock.fbd_moves import add_branch, del_branch
from mbgpu.clock.fossil_spr import ext_fossil_spr_clock
from mbgpu.clock.relaxed_state import RelaxedState
from mbgpu.moves.base import aborted, make_proposal


class _FossilBranchMove(ClockMove):
    """AddBranch / DelBranch: only the fossil's parent depth changes, and under igr / tk02 AddBranch's
    fossil takes its parent's rate (no tuning, not autotuned; no bound check on the effective lengths)."""

    kernel = staticmethod(add_branch)

    def propose(self, tree, rng, ctx):
        st, frame = tree.state, tree.frame
        depth = st.depth.copy()
        age = frame.model.tree_age
        cal_min = np.where(np.isnan(frame.cal_lo), 0.0, frame.cal_lo)
        cal_max = np.where(np.isnan(frame.cal_hi), math.inf, frame.cal_hi)
        rates = np.ones(depth.shape[0]) if tree.relaxed is None else tree.relaxed.rates.copy()
        r = self.kernel(kernel_state(rng), st.parent, st.kids, depth, st.n_tips, st.clock_rate, st.cal_kind,
                        cal_min, cal_max, age.kind, age.min, age.max, rates)
        if not r > -math.inf:
            return aborted(tree)
        relaxed = None if tree.relaxed is None else RelaxedState(tree.relaxed.kind, rates)
        return make_proposal(tree, tree.moved(st.parent, st.kids, depth, relaxed=relaxed), r)


class AddBranch(_FossilBranchMove):
    name = "AddBranch"
    kernel = staticmethod(add_branch)


class DelBranch(_FossilBranchMove):
    name = "DelBranch"
    kernel = staticmethod(del_branch)


class ExtFossilSprClock(_DepthMove):
    name = "ExtFossilSprClock"

    def _kernel(self, s, w, lo, hi, ctx):
        return ext_fossil_spr_clock(s, w.parent, w.kids, w.depth, w.n_tips, lo, hi, w.locked, self.tuning["p_ext"])


class FossilizationSlider(_ParamMove):
    name, param = "Slider", "relative_fossilization"

    def _kernel(self, s, values, model):
        return pm.fossilization_slider(s, values, self.tuning["delta"])


KINDS = {"addbranch": AddBranch, "delbranch": DelBranch, "extfossilspr": ExtFossilSprClock,
         "fossilization": FossilizationSlider}
