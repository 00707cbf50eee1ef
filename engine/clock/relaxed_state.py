"""A chain's relaxed-clock state (igr branch rates or tk02 node rates) and the effective branch lengths the
likelihood and the `.t` file read: MrBayes 3.2.7a keeps them as the IgrBrlens / TK02Brlens parameter's
values and updates them in every tree move (proposal.c).

Effective lengths are a function of the tree's current branch lengths (ClockStart.brlen: the start tree's as
written until a move changes a branch, as MrBayes' p->length) and the rates: igr rate x length, tk02 length x
the mean of the node's and its parent's rates. Rates stay with node ids when the topology changes (the root
keeps its id; its tk02 rate stays 1), so a move only has to say whether the new effective lengths are in
MrBayes' bounds (`in_bounds`; outside them MrBayes aborts the move).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.clock.limits import RELBRLENS_MAX, RELBRLENS_MIN

KINDS = ("igr", "tk02")          # the relaxed clocks whose state is one rate per node


@dataclass(frozen=True)
class RelaxedState:
    """`kind` ('igr' or 'tk02') and `rates[v]`: the igr rate of the branch above v, or the tk02 rate of node v."""

    kind: str
    rates: np.ndarray

    def effective_lengths(self, parent: np.ndarray, brlen: np.ndarray) -> np.ndarray:
        """The effective length of each node's branch (0 at the root)."""
        if self.kind == "igr":
            return np.where(parent >= 0, self.rates * brlen, 0.0)
        up = self.rates[np.maximum(parent, 0)]
        return np.where(parent >= 0, brlen * (self.rates + up) / 2.0, 0.0)

    def copy(self) -> "RelaxedState":
        return RelaxedState(self.kind, self.rates.copy())


def start_relaxed(model, n_nodes: int) -> RelaxedState | None:
    """MrBayes' start state of the tree's relaxed clock: every rate 1 (None for a strict clock)."""
    return RelaxedState(model.clock_var, np.ones(n_nodes)) if model.clock_var in KINDS else None


def in_bounds(brlen: np.ndarray, parent: np.ndarray, eff: np.ndarray) -> bool:
    """Whether every branch of positive length has its effective length in [RELBRLENS_MIN, RELBRLENS_MAX]
    (the test after which the tree moves and the rate moves abort under igr / tk02)."""
    live = (parent >= 0) & (brlen > 0.0)
    return bool(np.all((eff[live] >= RELBRLENS_MIN) & (eff[live] <= RELBRLENS_MAX)))
