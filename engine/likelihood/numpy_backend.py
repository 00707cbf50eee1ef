"""The numpy float64 reference backend of the likelihood protocol (mbgpu.likelihood.protocol).

Vectorised over categories and patterns: a child's contribution is one batched matmul
(categories x patterns x states) @ (categories x states x states), or a gather from the transposed
transition matrix for compact tip states. This is the reference the CUDA backend is tested against.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.likelihood.host_buffers import HostBuffers
from mbgpu.likelihood.protocol import NONE, InstanceSpec


class NumpyBackend(HostBuffers):
    """One instance: buffers as numpy arrays, operations executed in order on the CPU."""

    def __init__(self, spec: InstanceSpec):
        super().__init__(spec)
        self._work: np.ndarray | None = None

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
