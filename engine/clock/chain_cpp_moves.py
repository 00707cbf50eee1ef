"""MrBayes 3.2.7a's compound Poisson process moves as the sampler's clock moves (mbgpu.clock.chain_moves):
Multiplier(Lambda_cpp) changes cppRate (ClockTree.params), Add_delete / Prior_draw_pos / Prior_draw_mult
(CppEvents) the events of ClockTree.relaxed, each through its kernel of mbgpu.clock.cpp_moves. The compiled
core runs them (mbgpu.core.clock_moves, which also carries the events through the tree moves); these
classes give it their names, weights and tuning, and run them on one ClockTree.
"""
from __future__ import annotations

import math

from mbgpu.clock import cpp_moves
from mbgpu.clock.chain_moves import ClockMove, _ParamMove, kernel_state
from mbgpu.clock.limits import CPPLAMBDA_MAX, CPPLAMBDA_MIN
from mbgpu.moves.base import aborted, make_proposal


class CppRateMultiplier(_ParamMove):
    """Multiplier(Lambda_cpp), Move_CPPRate (cppratepr is fixed or exponential: MrBayes' bounds)."""

    name, param = "Multiplier", "cppRate"

    def bounds(self, model) -> tuple[float, float]:
        return CPPLAMBDA_MIN, CPPLAMBDA_MAX

    def _kernel(self, s, values, model):
        values[0], r = cpp_moves.move_cpp_rate(s, float(values[0]), self.tuning["lambda"])
        return r


class _EventMove(ClockMove):
    """A move of the CPP events on a copy of the tree's relaxed state (no tuning)."""

    def _kernel(self, s, tree, ev, eff):
        raise NotImplementedError

    def propose(self, tree, rng, ctx):
        ev = tree.relaxed.copy()
        r = self._kernel(kernel_state(rng), tree, ev, tree.eff.copy())
        if not r > -math.inf:
            return aborted(tree)
        st = tree.state
        return make_proposal(tree, tree.moved(st.parent, st.kids, st.depth, relaxed=ev), r)


class CppEventsAddDelete(_EventMove):
    """Add_delete(CppEvents), Move_AddDeleteCPPEvent."""

    name = "Add_delete"

    def _kernel(self, s, tree, ev, eff):
        st = tree.state
        return cpp_moves.move_cpp_add_delete(s, st.parent, st.kids, st.depth, ev.n_events, ev.positions,
                                             ev.multipliers, eff, tree.frame.model.cppmultdev)


class CppEventPosition(_EventMove):
    """Prior_draw_pos(CppEvents), Move_CPPEventPosition."""

    name = "Prior_draw_pos"

    def _kernel(self, s, tree, ev, eff):
        st = tree.state
        return cpp_moves.move_cpp_position(s, st.parent, st.kids, st.depth, ev.n_events, ev.positions,
                                           ev.multipliers, eff)


class CppEventMultiplier(_EventMove):
    """Prior_draw_mult(CppEvents), Move_CPPRateMultiplierRnd."""

    name = "Prior_draw_mult"

    def _kernel(self, s, tree, ev, eff):
        st = tree.state
        return cpp_moves.move_cpp_multiplier(s, st.parent, st.kids, st.depth, ev.n_events, ev.positions,
                                             ev.multipliers, eff, tree.frame.model.cppmultdev)


CPP_KINDS = {"cpprate": CppRateMultiplier, "cpp_add_delete": CppEventsAddDelete, "cpp_position": CppEventPosition,
             "cpp_multiplier": CppEventMultiplier}
