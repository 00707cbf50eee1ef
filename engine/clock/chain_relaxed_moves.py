"""MrBayes 3.2.7a's igr and tk02 relaxed-clock moves as the sampler's clock moves (mbgpu.clock.chain_moves):
Multiplier(Igrvar) / Multiplier(TK02var) change the variance parameter (ClockTree.params), Multiplier(IgrBrlens)
/ Multiplier(TK02Brlens) one branch (node) rate (ClockTree.relaxed), each through its kernel of
mbgpu.clock.relaxed_moves. The caller adds the prior ratio (ClockTree.ln_prior holds the rates' density and
the variance's prior) and the likelihood ratio, which reads the new effective lengths.
"""
from __future__ import annotations

import math

from mbgpu.clock import relaxed_moves as rx
from mbgpu.clock.chain_moves import ClockMove, _ParamMove, kernel_state
from mbgpu.clock.limits import IGRVAR_MAX, IGRVAR_MIN, TK02VAR_MAX, TK02VAR_MIN
from mbgpu.clock.relaxed_state import RelaxedState
from mbgpu.moves.base import aborted, make_proposal


def _var_bounds(prior, floor: float, ceiling: float) -> tuple[float, float]:
    """The reflection bounds of a variance: MrBayes' (floor, ceiling), narrowed to a uniform prior's range."""
    if prior.family == "Uniform":
        return rx.var_bounds(floor, ceiling, float(prior.params[0]), float(prior.params[1]))
    return rx.var_bounds(floor, ceiling, 0.0, math.inf)


class IgrvarMultiplier(_ParamMove):
    """Multiplier(Igrvar), Move_IgrVar."""

    name, param = "Multiplier", "igrvar"

    def bounds(self, model) -> tuple[float, float]:
        return _var_bounds(model.igrvar, IGRVAR_MIN, IGRVAR_MAX)

    def _kernel(self, s, values, model):
        values[0], r = rx.move_igrvar(s, float(values[0]), self.tuning["lambda"], *self.bounds(model))
        return r


class TK02varMultiplier(_ParamMove):
    """Multiplier(TK02var), Move_Nu."""

    name, param = "Multiplier", "tk02var"

    def bounds(self, model) -> tuple[float, float]:
        return _var_bounds(model.tk02var, TK02VAR_MIN, TK02VAR_MAX)

    def _kernel(self, s, values, model):
        values[0], r = rx.move_tk02var(s, float(values[0]), self.tuning["lambda"], *self.bounds(model))
        return r


class _RateMove(ClockMove):
    """A move of one branch (node) rate; the kernel checks the effective lengths it changes (-inf: abort)."""

    name = "Multiplier"

    def _kernel(self, s, tree, rates, eff):
        raise NotImplementedError

    def propose(self, tree, rng, ctx):
        rates, eff = tree.relaxed.rates.copy(), tree.eff.copy()
        r = self._kernel(kernel_state(rng), tree, rates, eff)
        if not r > -math.inf:
            return aborted(tree)
        st = tree.state
        return make_proposal(tree, tree.moved(st.parent, st.kids, st.depth,
                                              relaxed=RelaxedState(tree.relaxed.kind, rates)), r)


class IgrBrlensMultiplier(_RateMove):
    """Multiplier(IgrBrlens), Move_IgrBranchRate."""

    def _kernel(self, s, tree, rates, eff):
        st = tree.state
        return rx.move_igr_branch_rate(s, st.parent, st.depth, rates, eff, self.tuning["lambda"])


class TK02BrlensMultiplier(_RateMove):
    """Multiplier(TK02Brlens), Move_TK02BranchRate."""

    def _kernel(self, s, tree, rates, eff):
        st = tree.state
        return rx.move_tk02_branch_rate(s, st.parent, st.kids, st.depth, rates, eff, self.tuning["lambda"])


RELAXED_KINDS = {"igrvar": IgrvarMultiplier, "igrbrlens": IgrBrlensMultiplier, "tk02var": TK02varMultiplier,
                 "tk02brlens": TK02BrlensMultiplier}
