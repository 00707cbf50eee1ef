"""Tree-level likelihood: turns a Tree into protocol operations and drives a backend.

PartitionLikelihood owns one backend instance for one partition (for standard data: one group of
characters with the same number of states). `log_likelihood(tree)` recomputes everything (used for
the initial state and by tests); the sampler uses the same NodeSlots numbering with active slots.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np

from mbgpu.errors import DataError, ModelError
from mbgpu.likelihood.mkv import model_correction
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.likelihood.protocol import NONE, InstanceSpec, LikelihoodBackend
from mbgpu.models.substitution import SubstitutionModel
from mbgpu.tree import Tree

BackendFactory = Callable[[InstanceSpec], LikelihoodBackend]


@dataclass(frozen=True)
class NodeSlots:
    """Buffer, matrix and scale indices of tree nodes, `per_node` (2: double buffering) slots per node.

    Tip v uses buffer v. Internal node v, slot k: partial buffer n_tips + per_node*(v - n_tips) + k
    and scale buffer per_node*(v - n_tips) + k. Every node's branch: matrix per_node*v + k. The last
    `per_node` scale buffers are the cumulative ones (one per slot).
    """

    n_tips: int
    per_node: int = 2

    @property
    def n_nodes(self) -> int:
        return 2 * self.n_tips - 1          # enough for rooted binary trees; unrooted use one fewer

    def buffer(self, v: int, slot: int = 0) -> int:
        return v if v < self.n_tips else self.n_tips + self.per_node * (v - self.n_tips) + slot

    def matrix(self, v: int, slot: int = 0) -> int:
        return self.per_node * v + slot

    def scale(self, v: int, slot: int = 0) -> int:
        return self.per_node * (v - self.n_tips) + slot

    def cumulative_scale(self, slot: int = 0) -> int:
        return self.per_node * (self.n_nodes - self.n_tips) + slot

    def instance_spec(self, n_patterns: int, n_states: int, n_categories: int) -> InstanceSpec:
        n_internal = self.n_nodes - self.n_tips
        return InstanceSpec(n_tips=self.n_tips, n_partials=self.per_node * n_internal, n_patterns=n_patterns,
                            n_states=n_states, n_categories=n_categories,
                            n_matrices=self.per_node * self.n_nodes,
                            n_scale_buffers=self.per_node * (n_internal + 1))


def tree_operations(tree: Tree, slots: NodeSlots, scaling: bool | int = True, slot: int = 0):
    """(ops int64[n, 7], scale indices written, root buffer, edge child, edge matrix) for a full pass.

    `scaling`: True rescales every internal node, False none, an int n every n-th internal node in
    postorder (and the root). A trifurcating root combines its first two children by an operation and hands the third to the
    root likelihood as an edge child. Internal nodes other than the root must be binary.
    """
    kids = tree.children()
    root = tree.root
    rows, scales = [], []
    every = 1 if scaling is True else int(scaling)
    for i, v in enumerate(v for v in tree.postorder().tolist() if v >= tree.n_tips):
        ch = kids[v]
        if len(ch) != 2 and not (v == root and len(ch) == 3):
            raise DataError("tree node with %d children: only binary trees (root: 2 or 3 children) "
                            "are supported" % len(ch))
        s = slots.scale(v, slot) if every > 0 and ((i + 1) % every == 0 or v == root) else NONE
        if s != NONE:
            scales.append(s)
        rows.append((slots.buffer(v, slot), s, NONE, slots.buffer(ch[0], slot), slots.matrix(ch[0], slot),
                     slots.buffer(ch[1], slot), slots.matrix(ch[1], slot)))
    edge_child, edge_matrix = NONE, NONE
    if len(kids[root]) == 3:
        third = kids[root][2]
        edge_child, edge_matrix = slots.buffer(third, slot), slots.matrix(third, slot)
    ops = np.array(rows, dtype=np.int64).reshape(-1, 7)
    return ops, np.array(scales, dtype=np.int64), slots.buffer(root, slot), edge_child, edge_matrix


def _compact_states(tip: np.ndarray) -> Optional[np.ndarray]:
    """uint8 states when every row is one-hot or all ones (missing), else None (needs tip partials)."""
    ones = tip.sum(axis=1)
    n_states = tip.shape[1]
    binary = np.all((tip == 0.0) | (tip == 1.0))
    if not binary or not np.all((ones == 1.0) | (ones == n_states)):
        return None
    states = np.where(ones == n_states, n_states, tip.argmax(axis=1))
    return states.astype(np.uint8)


class PartitionLikelihood:
    """Log likelihood of one partition on a tree: data, model, rate multiplier and a backend."""

    def __init__(self, tip_partials: np.ndarray, weights: np.ndarray, model: SubstitutionModel,
                 rate_multiplier: float = 1.0, backend: BackendFactory | None = None,
                 scaling: bool | int = True, double_buffer: bool = True):
        tip_partials = np.asarray(tip_partials, dtype=np.float64)
        if tip_partials.ndim != 3 or tip_partials.shape[2] != model.n_states:
            raise ModelError("tip partials of shape %s do not fit a %d-state model"
                             % (tip_partials.shape, model.n_states))
        self.n_tips, self.n_patterns, _ = tip_partials.shape
        self.weights = np.asarray(weights, dtype=np.float64)
        assert self.weights.shape == (self.n_patterns,)
        self.model = model
        self.rate_multiplier = float(rate_multiplier)
        self.scaling = scaling
        self.slots = NodeSlots(self.n_tips, 2 if double_buffer else 1)
        factory = backend or NumpyBackend
        self.backend = factory(self.slots.instance_spec(self.n_patterns, model.n_states, model.n_categories))
        self.backend.set_pattern_weights(self.weights)
        self.backend.set_category_rates(model.category_rates)
        for t in range(self.n_tips):
            states = _compact_states(tip_partials[t])
            if states is None:
                self.backend.set_tip_partials(t, tip_partials[t])
            else:
                self.backend.set_tip_states(t, states)
        self.coding_variable = model.spec.coding == "variable"

    def _run(self, tree: Tree) -> tuple:
        """Compute matrices and partials for `tree`; return the root call's arguments."""
        if tree.n_tips != self.n_tips:
            raise DataError("tree has %d taxa, data has %d" % (tree.n_tips, self.n_tips))
        nodes = np.flatnonzero(tree.parent >= 0)
        matrices = np.array([self.slots.matrix(v) for v in nodes.tolist()], dtype=np.int64)
        self.backend.update_transition_matrices(self.model.eigen, matrices,
                                                tree.brlen[nodes] * self.rate_multiplier)
        ops, scales, root, child, child_matrix = tree_operations(tree, self.slots, self.scaling)
        self.backend.update_partials(ops)
        cumulative = NONE
        if scales.size:
            cumulative = self.slots.cumulative_scale()
            self.backend.reset_scale(cumulative)
            self.backend.accumulate_scale(cumulative, scales)
        return (root, self.model.frequencies, self.model.category_weights, self.model.pinvar,
                cumulative, child, child_matrix)

    def site_log_likelihoods(self, tree: Tree) -> np.ndarray:
        """log L per pattern (no Mkv correction)."""
        return self.backend.site_log_likelihoods(*self._run(tree))

    def log_likelihood(self, tree: Tree) -> float:
        """ln L of the partition on `tree` (branch lengths times the rate multiplier), Mkv-corrected."""
        lnl = self.backend.root_log_likelihood(*self._run(tree))
        if self.coding_variable:
            lnl += model_correction(self.weights, tree, self.model, self.rate_multiplier)
        return float(lnl)


def total_log_likelihood(partitions: Iterable[PartitionLikelihood], tree: Tree) -> float:
    """Sum of the partitions' log likelihoods on one tree."""
    return float(sum(p.log_likelihood(tree) for p in partitions))
