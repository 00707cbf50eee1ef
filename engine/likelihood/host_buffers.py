"""The host-memory buffers and data setters that the numpy reference and the compiled CPU backend share.

Both keep an instance's buffers as numpy arrays (mbgpu.likelihood.protocol describes them); they differ
only in how operations are executed. Subclasses reset what they derive from the tips in `_tips_changed`.
"""
from __future__ import annotations

import numpy as np

from mbgpu.likelihood.protocol import InstanceSpec


class HostBuffers:
    """Partials, compact tip states or tip partials, matrices, scale buffers, weights and rates."""

    # the precision of the compiled core's own copies (mbgpu.core.division): the backend choice sets
    # float32 for `set beagleprecision=single`; these buffers stay float64
    core_dtype = np.float64

    def __init__(self, spec: InstanceSpec):
        self.spec = spec
        c, p, s = spec.n_categories, spec.n_patterns, spec.n_states
        self.partials = np.zeros((spec.n_partials, c, p, s))
        self.tip_states = np.full((spec.n_tips, p), s, dtype=np.uint8)
        self.tip_partials: list[np.ndarray | None] = [None] * spec.n_tips
        self.matrices = np.zeros((spec.n_matrices, c, s, s))
        self.scale = np.zeros((spec.n_scale_buffers, p))
        self.pattern_weights = np.ones(p)
        self.category_rates = np.ones(c)
        self._invariant_compat: np.ndarray | None = None

    def _tips_changed(self) -> None:
        self._invariant_compat = None

    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        states = np.asarray(states)
        assert states.shape == (self.spec.n_patterns,)
        self.tip_states[tip] = np.minimum(states, self.spec.n_states).astype(np.uint8)
        self.tip_partials[tip] = None
        self._tips_changed()

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        partials = np.asarray(partials, dtype=np.float64)
        assert partials.shape == (self.spec.n_patterns, self.spec.n_states)
        self.tip_partials[tip] = np.ascontiguousarray(partials)
        self._tips_changed()

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        self.pattern_weights = np.ascontiguousarray(weights, dtype=np.float64).copy()

    def set_category_rates(self, rates: np.ndarray) -> None:
        rates = np.asarray(rates, dtype=np.float64)
        assert rates.shape == (self.spec.n_categories,)
        self.category_rates = rates.copy()

    def update_transition_matrices(self, eigen, matrix_indices: np.ndarray, edge_lengths: np.ndarray) -> None:
        """P(t * rate) for every listed matrix and every category (numpy's eigen product, on the host)."""
        idx = np.asarray(matrix_indices, dtype=np.int64)
        t = np.asarray(edge_lengths, dtype=np.float64)[:, None] * self.category_rates[None, :]
        self.matrices[idx] = eigen.transition_matrices(t)

    def set_transition_matrices(self, matrix_indices: np.ndarray, matrices: np.ndarray) -> None:
        self.matrices[np.asarray(matrix_indices, dtype=np.int64)] = matrices

    def _invariant_site_compat(self) -> np.ndarray:
        """prod over tips of the tip vectors (P, S): which states every tip allows (for +I)."""
        if self._invariant_compat is None:
            s = self.spec.n_states
            eye = np.vstack([np.eye(s), np.ones((1, s))])
            compat = np.ones((self.spec.n_patterns, s))
            for tip in range(self.spec.n_tips):
                tp = self.tip_partials[tip]
                compat *= eye[self.tip_states[tip]] if tp is None else tp
            self._invariant_compat = compat
        return self._invariant_compat
