"""The likelihood protocol: what every backend (numpy reference, CUDA) implements.

Key concepts (after BEAGLE, but 64-bit and Pythonic):

* An **instance** holds the data of one partition (or of many chains of one partition) in indexed
  buffers. It knows no trees: the caller, who knows the tree, sends small integer operation arrays.
* **Buffers.** Indices 0..n_tips-1 are tips: compact states (uint8, one per pattern; a value
  >= n_states means "any state", i.e. missing/gap) or tip partials float64[n_patterns, n_states] (for
  ambiguity codes). Indices n_tips..n_tips+n_partials-1 are partial buffers, each
  float64[n_categories, n_patterns, n_states]. Transition matrices: float64[n_matrices, n_categories,
  n_states, n_states] with P[m, c, i, j] = P(j at the child | i at the parent). Scale buffers:
  float64[n_scale_buffers, n_patterns] holding natural-log scale factors; any scale buffer may serve as
  a cumulative one.
* **Operations** `update_partials(ops)`: int64[n, 7] rows `(dest, dest_scale_write, dest_scale_read,
  child1, child1_matrix, child2, child2_matrix)` in dependency order. dest = (P1 x child1) * (P2 x
  child2) per category and pattern. With dest_scale_write >= 0 the backend rescales every pattern by its
  largest entry (over categories and states) and stores log(factor) there; with dest_scale_read >= 0
  (and no write) it divides by that buffer's existing factors. -1 (NONE) means "none". The backend
  chooses a code path per node class: tip-tip (BEAGLE/MrBayes `down_3`), tip-internal (`down_12`),
  internal-internal (`down_0`).
* `root_log_likelihood(root, freqs, weights, pinvar, cumulative_scale, child=NONE, child_matrix=NONE)`:
  site likelihood L_p = pinvar * L_inv,p + (1 - pinvar) * exp(S_p) * sum_c w_c sum_s pi_s R[c, p, s],
  R the root partials (times P x child when an edge child is given: that is how a trifurcating
  unrooted root is finished), S_p the cumulative log scale; returns sum_p n_p log L_p with
  compensated summation over patterns (n_p the pattern weights).

Node slots are double-buffered by the caller (mbgpu.likelihood.evaluate.NodeSlots): node v's partials
live in buffer n_tips + 2*(v - n_tips) + active[v]; a proposal writes the other slot and flips,
a rejection flips back (no copies).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

NONE = -1
OP_DEST, OP_DEST_SCALE_WRITE, OP_DEST_SCALE_READ, OP_CHILD1, OP_CHILD1_MATRIX, OP_CHILD2, OP_CHILD2_MATRIX = range(7)
OP_WIDTH = 7


@dataclass(frozen=True)
class InstanceSpec:
    """Sizes of one backend instance; every count is a Python int (int64 on the device side)."""

    n_tips: int
    n_partials: int
    n_patterns: int
    n_states: int
    n_categories: int
    n_matrices: int
    n_scale_buffers: int

    @property
    def n_buffers(self) -> int:
        """Tip buffers plus partial buffers (the index space of ops' dest/child columns)."""
        return self.n_tips + self.n_partials

    def bytes_required(self, tip_partial_tips: int = 0) -> dict[str, int]:
        """Bytes per buffer family in float64, for planning memory before allocating."""
        c, p, s = self.n_categories, self.n_patterns, self.n_states
        return {
            "partials": 8 * self.n_partials * c * p * s,
            "tip_states": self.n_tips * p,
            "tip_partials": 8 * tip_partial_tips * p * s,
            "matrices": 8 * self.n_matrices * c * s * s,
            "scale_buffers": 8 * self.n_scale_buffers * p,
            "pattern_weights": 8 * p,
        }


@runtime_checkable
class LikelihoodBackend(Protocol):
    """The calls the sampler and PartitionLikelihood make; see the module docstring for semantics."""

    spec: InstanceSpec

    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        """Compact tip data: uint8[n_patterns], values >= n_states mean 'any state'."""

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        """Tip partial vectors float64[n_patterns, n_states] (1 for every compatible state)."""

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        """How many sites each pattern stands for (float64[n_patterns])."""

    def set_category_rates(self, rates: np.ndarray) -> None:
        """Rate multiplier of each category (float64[n_categories]); used by update_transition_matrices."""

    def update_transition_matrices(self, eigen, matrix_indices: np.ndarray, edge_lengths: np.ndarray) -> None:
        """P[m, c] = exp(Q * rate_c * t) from an EigenSystem, for each (matrix index m, length t)."""

    def set_transition_matrices(self, matrix_indices: np.ndarray, matrices: np.ndarray) -> None:
        """Store given matrices float64[len(indices), n_categories, S, S] (tests, other models)."""

    def update_partials(self, ops: np.ndarray) -> None:
        """Run int64[n, 7] operations in order (see module docstring)."""

    def reset_scale(self, cumulative: int) -> None:
        """Set a cumulative scale buffer to zero."""

    def accumulate_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        """cumulative += sum of the listed scale buffers."""

    def remove_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        """cumulative -= sum of the listed scale buffers."""

    def site_log_likelihoods(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                             cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> np.ndarray:
        """log L_p per pattern (float64[n_patterns]), unweighted."""

    def root_log_likelihood(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                            cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> float:
        """sum_p n_p log L_p with compensated summation."""


def make_ops(rows) -> np.ndarray:
    """An int64[n, 7] operation array from rows of seven integers."""
    ops = np.asarray(rows, dtype=np.int64).reshape(-1, OP_WIDTH)
    return np.ascontiguousarray(ops)
