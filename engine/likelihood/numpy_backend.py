"""The numpy float64 reference backend of the likelihood protocol (mbgpu.likelihood.protocol).

Vectorised over categories and patterns: a child's contribution is one batched matmul
(categories x patterns x states) @ (categories x states x states), or a gather from the transposed
transition matrix for compact tip states. This is the reference the CUDA backend is tested against.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.likelihood.protocol import NONE, InstanceSpec


class NumpyBackend:
    """One instance: buffers as numpy arrays, operations executed in order on the CPU."""

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
        self._work: np.ndarray | None = None

    # ------------------------------------------------------------------ data
    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        states = np.asarray(states)
        assert states.shape == (self.spec.n_patterns,)
        self.tip_states[tip] = np.minimum(states, self.spec.n_states).astype(np.uint8)
        self.tip_partials[tip] = None
        self._invariant_compat = None

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        partials = np.asarray(partials, dtype=np.float64)
        assert partials.shape == (self.spec.n_patterns, self.spec.n_states)
        self.tip_partials[tip] = np.ascontiguousarray(partials)
        self._invariant_compat = None

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        self.pattern_weights = np.asarray(weights, dtype=np.float64).copy()

    def set_category_rates(self, rates: np.ndarray) -> None:
        rates = np.asarray(rates, dtype=np.float64)
        assert rates.shape == (self.spec.n_categories,)
        self.category_rates = rates.copy()

    # ------------------------------------------------------------------ matrices
    def update_transition_matrices(self, eigen, matrix_indices: np.ndarray, edge_lengths: np.ndarray) -> None:
        idx = np.asarray(matrix_indices, dtype=np.int64)
        t = np.asarray(edge_lengths, dtype=np.float64)[:, None] * self.category_rates[None, :]
        self.matrices[idx] = eigen.transition_matrices(t)

    def set_transition_matrices(self, matrix_indices: np.ndarray, matrices: np.ndarray) -> None:
        self.matrices[np.asarray(matrix_indices, dtype=np.int64)] = matrices

    # ------------------------------------------------------------------ partials
    def _is_tip(self, buffer: int) -> bool:
        return buffer < self.spec.n_tips

    def _tip_state_term(self, tip: int, matrix: int, out: np.ndarray) -> np.ndarray:
        """sum_j P[c, i, j] x_j for a compact tip: a gather from P^T with an all-ones 'missing' row."""
        pt = self.matrices[matrix].transpose(0, 2, 1)                  # (C, S_child, S_parent)
        ext = np.concatenate([pt, np.ones((pt.shape[0], 1, pt.shape[2]))], axis=1)
        return np.take(ext, self.tip_states[tip], axis=1, out=out)     # (C, P, S)

    def _child_term(self, child: int, matrix: int, out: np.ndarray) -> np.ndarray:
        """The child's contribution (C, P, S) to its parent's partials, written into `out`."""
        if self._is_tip(child) and self.tip_partials[child] is None:
            return self._tip_state_term(child, matrix, out)
        pt = np.ascontiguousarray(self.matrices[matrix].transpose(0, 2, 1))   # contiguous: BLAS path
        if self._is_tip(child):
            return np.matmul(self.tip_partials[child][None, :, :], pt, out=out)
        return np.matmul(self.partials[child - self.spec.n_tips], pt, out=out)

    def _scratch(self) -> np.ndarray:
        """One reusable (C, P, S) work array (allocated on first use)."""
        if self._work is None:
            self._work = np.empty(self.partials.shape[1:])
        return self._work

    def _down_3(self, dest: np.ndarray, c1: int, m1: int, c2: int, m2: int) -> None:
        """Tip-tip node."""
        self._child_term(c1, m1, dest)
        dest *= self._child_term(c2, m2, self._scratch())

    def _down_12(self, dest: np.ndarray, tip: int, mt: int, inner: int, mi: int) -> None:
        """Tip-internal node."""
        self._child_term(inner, mi, dest)
        dest *= self._child_term(tip, mt, self._scratch())

    def _down_0(self, dest: np.ndarray, c1: int, m1: int, c2: int, m2: int) -> None:
        """Internal-internal node."""
        self._child_term(c1, m1, dest)
        dest *= self._child_term(c2, m2, self._scratch())

    def update_partials(self, ops: np.ndarray) -> None:
        ops = np.asarray(ops, dtype=np.int64).reshape(-1, 7)
        n_tips = self.spec.n_tips
        for dest_b, s_write, s_read, c1, m1, c2, m2 in ops.tolist():
            assert dest_b >= n_tips and dest_b not in (c1, c2), "bad dest %d in op" % dest_b
            dest = self.partials[dest_b - n_tips]
            tip1, tip2 = c1 < n_tips, c2 < n_tips
            if tip1 and tip2:
                self._down_3(dest, c1, m1, c2, m2)
            elif tip1 or tip2:
                tip, mt, inner, mi = (c1, m1, c2, m2) if tip1 else (c2, m2, c1, m1)
                self._down_12(dest, tip, mt, inner, mi)
            else:
                self._down_0(dest, c1, m1, c2, m2)
            if s_write != NONE:
                self._rescale(dest, s_write)
            elif s_read != NONE:
                dest *= np.exp(-self.scale[s_read])[None, :, None]

    def _rescale(self, dest: np.ndarray, scale_index: int) -> None:
        """Divide each pattern by its largest entry; store log(factor) (0 where the pattern is all 0)."""
        over_categories = dest.max(axis=0)                             # (P, S), a fast reduction
        largest = over_categories[:, 0].copy()
        for state in range(1, over_categories.shape[1]):               # short rows: column maxima
            np.maximum(largest, over_categories[:, state], out=largest)
        largest[largest <= 0.0] = 1.0
        dest /= largest[None, :, None]
        self.scale[scale_index] = np.log(largest)

    # ------------------------------------------------------------------ scaling
    def reset_scale(self, cumulative: int) -> None:
        self.scale[cumulative] = 0.0

    def accumulate_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        idx = np.asarray(scale_indices, dtype=np.int64)
        if idx.size:
            self.scale[cumulative] += self.scale[idx].sum(axis=0)

    def remove_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        idx = np.asarray(scale_indices, dtype=np.int64)
        if idx.size:
            self.scale[cumulative] -= self.scale[idx].sum(axis=0)

    # ------------------------------------------------------------------ root
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

    def site_log_likelihoods(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                             cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> np.ndarray:
        freqs = np.asarray(freqs, dtype=np.float64)
        r = self.partials[root - self.spec.n_tips]
        if child != NONE:
            r = r * self._child_term(child, child_matrix, np.empty_like(r))
        site = np.asarray(weights, dtype=np.float64) @ (r @ freqs)     # (P,)
        with np.errstate(divide="ignore"):
            ln = np.log(site)
            if cumulative_scale != NONE:
                ln += self.scale[cumulative_scale]
            if pinvar > 0.0:
                inv = self._invariant_site_compat() @ freqs
                ln = np.logaddexp(ln + math.log1p(-pinvar), np.log(pinvar * inv))
        return ln

    def root_log_likelihood(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                            cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> float:
        ln = self.site_log_likelihoods(root, freqs, weights, pinvar, cumulative_scale, child, child_matrix)
        return compensated_sum(self.pattern_weights * ln)


def compensated_sum(values: np.ndarray) -> float:
    """Sum with compensation: math.fsum (exactly rounded; stronger than Kahan/Neumaier)."""
    return math.fsum(np.asarray(values, dtype=np.float64).tolist())
