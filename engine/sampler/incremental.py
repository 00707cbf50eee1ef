"""One partition's likelihood for one chain, recomputing only what a proposal changed.

Every node owns two partial/scale slots and two matrix slots (mbgpu.likelihood.evaluate.NodeSlots).
A proposal writes the inactive slots of the nodes it dirtied and flips them; `reject()` flips them
back, `accept()` keeps them: no copies. Dirty nodes are found by diffing the old and new tree, so
moves need not report what they touched.
"""
from __future__ import annotations

import numpy as np

from mbgpu.likelihood.evaluate import NodeSlots, _compact_states
from mbgpu.likelihood.mkv import model_correction
from mbgpu.likelihood.protocol import NONE
from mbgpu.tree import Tree


class IncrementalPartition:
    """Double-buffered likelihood state of one pattern set on one chain."""

    def __init__(self, tip_partials: np.ndarray, weights: np.ndarray, model, rate_multiplier: float,
                 factory, n_tips: int):
        self.n_tips = n_tips
        self.weights = np.asarray(weights, dtype=np.float64)
        self.slots = NodeSlots(n_tips, 2)
        n_pat, n_states = tip_partials.shape[1], tip_partials.shape[2]
        self.backend = factory(self.slots.instance_spec(n_pat, n_states, model.n_categories))
        self.backend.set_pattern_weights(self.weights)
        for t in range(n_tips):
            states = _compact_states(tip_partials[t])
            if states is None:
                self.backend.set_tip_partials(t, tip_partials[t])
            else:
                self.backend.set_tip_states(t, states)
        n = self.slots.n_nodes
        self.part_slot = np.zeros(n, dtype=np.int64)
        self.mat_slot = np.zeros(n, dtype=np.int64)
        self.model, self.mult = model, float(rate_multiplier)
        self.tree: Tree | None = None
        self.lnl = 0.0
        self._saved = None
        self.coding_variable = model.spec.coding == "variable"

    # -- proposals ---------------------------------------------------------------------------
    def propose(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> float:
        """ln L for `tree` (and a new model / multiplier if given), written into inactive slots."""
        self._saved = (self.part_slot.copy(), self.mat_slot.copy(), self.tree, self.model, self.mult, self.lnl)
        full = self.tree is None or model is not None or rate_multiplier is not None
        if model is not None:
            self.model = model
            self.backend.set_category_rates(model.category_rates)
        if rate_multiplier is not None:
            self.mult = float(rate_multiplier)
        if self.tree is None:
            self.backend.set_category_rates(self.model.category_rates)
        mat_dirty, part_dirty = self._dirty(tree, full)
        self._recompute(tree, mat_dirty, part_dirty)
        self.tree = tree
        self.lnl = self._root(tree)
        return self.lnl

    def stage(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> None:
        """Chain.begin_step's call: the per-chain path computes at once (batch_step.LanePartition queues)."""
        self.propose(tree, model, rate_multiplier)

    def accept(self) -> None:
        self._saved = None

    def reject(self) -> None:
        assert self._saved is not None, "reject() without a pending proposal"
        self.part_slot, self.mat_slot, self.tree, self.model, self.mult, self.lnl = self._saved
        self.backend.set_category_rates(self.model.category_rates)
        self._saved = None

    # -- internals -----------------------------------------------------------------------------
    def _dirty(self, tree: Tree, full: bool) -> tuple[np.ndarray, list[int]]:
        edges = tree.parent >= 0
        old = self.tree
        if full:
            mat_dirty = np.flatnonzero(edges)
        else:
            mat_dirty = np.flatnonzero(edges & (old.brlen != tree.brlen))
        kids = tree.children()
        old_kids = old.children() if old is not None and not full else None
        changed = np.zeros(tree.n_nodes, dtype=bool)
        changed[mat_dirty] = True
        part_dirty = []
        for v in tree.postorder().tolist():
            if v < tree.n_tips:
                continue
            if full or old_kids[v] != kids[v] or any(changed[c] for c in kids[v]):
                changed[v] = True
                part_dirty.append(v)
        return mat_dirty, part_dirty

    def _recompute(self, tree: Tree, mat_dirty: np.ndarray, part_dirty: list[int]) -> None:
        s = self.slots
        if mat_dirty.size:
            self.mat_slot[mat_dirty] ^= 1
            idx = np.array([s.matrix(v, self.mat_slot[v]) for v in mat_dirty.tolist()], dtype=np.int64)
            self.backend.update_transition_matrices(self.model.eigen, idx, tree.brlen[mat_dirty] * self.mult)
        if not part_dirty:
            return
        kids = tree.children()
        root = tree.root
        rows = []
        for v in part_dirty:
            self.part_slot[v] ^= 1
            c1, c2 = kids[v][0], kids[v][1]
            rows.append((self._buf(v), s.scale(v, self.part_slot[v]), NONE, self._buf(c1), self._mat(c1),
                         self._buf(c2), self._mat(c2)))
        assert len(kids[root]) == 3, "chains keep unrooted trees with a trifurcating root"
        self.backend.update_partials(np.array(rows, dtype=np.int64))

    def _buf(self, v: int) -> int:
        return v if v < self.n_tips else self.slots.buffer(v, self.part_slot[v])

    def _mat(self, v: int) -> int:
        return self.slots.matrix(v, self.mat_slot[v])

    def _root(self, tree: Tree) -> float:
        s = self.slots
        internal = np.arange(self.n_tips, tree.n_nodes)
        cum = s.cumulative_scale(0)
        self.backend.reset_scale(cum)
        scales = np.array([s.scale(v, self.part_slot[v]) for v in internal.tolist()], dtype=np.int64)
        self.backend.accumulate_scale(cum, scales)
        root = tree.root
        third = tree.children()[root][2]
        m = self.model
        lnl = self.backend.root_log_likelihood(self._buf(root), m.frequencies, m.category_weights, m.pinvar,
                                               cum, self._buf(third), self._mat(third))
        if self.coding_variable:
            lnl += model_correction(self.weights, tree, self.model, self.mult)
        return float(lnl)
