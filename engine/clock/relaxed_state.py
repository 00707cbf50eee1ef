"""A chain's relaxed-clock state (igr branch rates, tk02 node rates, or the compound Poisson process' events)
and the effective branch lengths the likelihood and the `.t` file read: MrBayes 3.2.7a keeps them as the
IgrBrlens / TK02Brlens / CppEvents parameter's values and updates them in every tree move (proposal.c).

Effective lengths are a function of the tree's current branch lengths (ClockStart.brlen: the start tree's as
written until a move changes a branch, as MrBayes' p->length) and the rates: igr rate x length, tk02 length x
the mean of the node's and its parent's rates, cpp length x the mean rate along the branch
(relaxed_lengths.cpp_effective_from_lengths). Rates stay with node ids when the topology changes (the root
keeps its id; its tk02 rate stays 1), so a move only has to say whether the new effective lengths are in
MrBayes' bounds (`in_bounds`; outside them MrBayes aborts the move).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.clock.limits import RELBRLENS_MAX, RELBRLENS_MIN
from mbgpu.clock.relaxed_lengths import CPP, IGR, TK02, effective_from_lengths

KINDS = ("igr", "tk02", "cpp")   # the relaxed clocks the sampler runs
CPP_CAPACITY = 16                # event slots per branch a CPP state starts with (the core grows them)


@dataclass(frozen=True)
class RelaxedState:
    """`kind` ('igr', 'tk02' or 'cpp') and `rates[v]`: the igr rate of the branch above v, or the tk02 rate of
    node v (ones for cpp); for cpp `n_events[v]` events on the branch above v at relative `positions[v, :n]`
    (0 = the child's end) with rate `multipliers[v, :n]` (rows of a fixed capacity)."""

    kind: str
    rates: np.ndarray
    n_events: np.ndarray | None = None
    positions: np.ndarray | None = None
    multipliers: np.ndarray | None = None

    def effective_lengths(self, parent: np.ndarray, brlen: np.ndarray, kids: np.ndarray | None = None) -> np.ndarray:
        """The effective length of each node's branch (0 at the root; relaxed_lengths.effective_from_lengths);
        cpp needs the tree's `kids`."""
        n = parent.shape[0]
        eff = np.zeros(n)
        none = np.zeros(n, dtype=np.int64), np.zeros((n, 1)), np.ones((n, 1))
        events = (self.n_events, self.positions, self.multipliers) if self.kind == "cpp" else none
        effective_from_lengths({"igr": IGR, "tk02": TK02, "cpp": CPP}[self.kind], np.asarray(parent, dtype=np.int64),
                               np.zeros((n, 2), dtype=np.int64) if kids is None else np.asarray(kids, dtype=np.int64),
                               np.asarray(brlen, dtype=np.float64), np.asarray(self.rates, dtype=np.float64), *events,
                               eff)
        return eff

    def copy(self) -> "RelaxedState":
        if self.kind != "cpp":
            return RelaxedState(self.kind, self.rates.copy())
        return RelaxedState(self.kind, self.rates.copy(), self.n_events.copy(), self.positions.copy(),
                            self.multipliers.copy())


def start_relaxed(model, n_nodes: int) -> RelaxedState | None:
    """MrBayes' start state of the tree's relaxed clock: every rate 1, no CPP event (None for a strict clock)."""
    if model.clock_var == "cpp":
        return RelaxedState("cpp", np.ones(n_nodes), np.zeros(n_nodes, dtype=np.int64),
                            np.zeros((n_nodes, CPP_CAPACITY)), np.ones((n_nodes, CPP_CAPACITY)))
    return RelaxedState(model.clock_var, np.ones(n_nodes)) if model.clock_var in KINDS else None


def in_bounds(brlen: np.ndarray, parent: np.ndarray, eff: np.ndarray) -> bool:
    """Whether every branch of positive length has its effective length in [RELBRLENS_MIN, RELBRLENS_MAX]
    (the test after which the tree moves and the rate moves abort under igr / tk02)."""
    live = (parent >= 0) & (brlen > 0.0)
    return bool(np.all((eff[live] >= RELBRLENS_MIN) & (eff[live] <= RELBRLENS_MAX)))
