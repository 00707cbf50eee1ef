"""MrBayes 3.2.7a's compound Poisson process moves as the sampler's clock moves (mbgpu.clock.chain_moves):
Multiplier(Lambda_cpp) changes cppRate (ClockTree.params), Add_delete / Prior_draw_pos / Prior_draw_mult
(CppEvents) the events of ClockTree.relaxed, each through its kernel of mbgpu.clock.cpp_moves. The compiled
core runs them (mbgpu.core.clock_moves, which also carries the events through the tree moves); these
classes give it their names, weights and tuning (Multiplier(Lambda_cpp) also runs on one ClockTree).
"""
from __future__ import annotations

from mbgpu.clock import cpp_moves
from mbgpu.clock.chain_moves import ClockMove, _ParamMove
from mbgpu.clock.limits import CPPLAMBDA_MAX, CPPLAMBDA_MIN
from mbgpu.errors import NotImplementedYet


class CppRateMultiplier(_ParamMove):
    """Multiplier(Lambda_cpp), Move_CPPRate (cppratepr is fixed or exponential: MrBayes' bounds)."""

    name, param = "Multiplier", "cppRate"

    def bounds(self, model) -> tuple[float, float]:
        return CPPLAMBDA_MIN, CPPLAMBDA_MAX

    def _kernel(self, s, values, model):
        values[0], r = cpp_moves.move_cpp_rate(s, float(values[0]), self.tuning["lambda"])
        return r


class _EventMove(ClockMove):
    """A move of the CPP events: only the compiled core runs it (mbgpu.core.clock_moves, on its event rows;
    the interpreted tree moves carry no events, so batch_step refuses cpp chains the core cannot step)."""

    def propose(self, tree, rng, ctx):
        raise NotImplementedYet("%s outside the compiled sampler core is not supported yet" % self.name)


class CppEventsAddDelete(_EventMove):
    """Add_delete(CppEvents), Move_AddDeleteCPPEvent (cpp_moves.move_cpp_add_delete)."""

    name = "Add_delete"


class CppEventPosition(_EventMove):
    """Prior_draw_pos(CppEvents), Move_CPPEventPosition (cpp_moves.move_cpp_position)."""

    name = "Prior_draw_pos"


class CppEventMultiplier(_EventMove):
    """Prior_draw_mult(CppEvents), Move_CPPRateMultiplierRnd (cpp_moves.move_cpp_multiplier)."""

    name = "Prior_draw_mult"


CPP_KINDS = {"cpprate": CppRateMultiplier, "cpp_add_delete": CppEventsAddDelete, "cpp_position": CppEventPosition,
             "cpp_multiplier": CppEventMultiplier}
