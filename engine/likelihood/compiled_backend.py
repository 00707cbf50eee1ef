"""The compiled (numba) CPU backend of the likelihood protocol (mbgpu.likelihood.protocol).

The same buffers and semantics as the numpy reference (mbgpu.likelihood.numpy_backend.NumpyBackend),
float64 throughout; the work is done by the kernels of mbgpu.likelihood.compiled_kernels, which this
class calls with plain arrays. Log likelihoods equal the reference's to about 1e-14 relative (only
the order of additions differs; tests assert 1e-12).

Threads: `threads` (default: numba's thread count, i.e. NUMBA_NUM_THREADS or the CPU count) is used
only when an update's patterns x states x categories reaches `parallel_min_work`; smaller updates run
on the calling thread, where a parallel region would cost more than it saves. Results are the same
for every thread count (patterns are independent; the sum over patterns is serial).

    >>> from mbgpu.likelihood.protocol import InstanceSpec
    >>> b = CompiledBackend(InstanceSpec(2, 1, 3, 4, 1, 2, 1), threads=1)
    >>> b.partials.shape
    (1, 1, 3, 4)
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.likelihood import compiled_kernels as k
from mbgpu.likelihood.host_buffers import HostBuffers
from mbgpu.likelihood.protocol import NONE, InstanceSpec

# patterns x states x categories of one update from which threads pay (measured on 2 cores:
# docs/performance.md, "Compiled CPU backend"); below it one thread is faster.
PARALLEL_MIN_WORK = 1 << 15
CACHE_BLOCK_ENTRIES = 1 << 14        # entries (categories x states x patterns) of one block of a node


class CompiledBackend(HostBuffers):
    """One instance: buffers as numpy arrays, operations executed by numba kernels."""

    def __init__(self, spec: InstanceSpec, *, threads: int | None = None,
                 parallel_min_work: int = PARALLEL_MIN_WORK):
        super().__init__(spec)
        c, p, s = spec.n_categories, spec.n_patterns, spec.n_states
        available = numba.config.NUMBA_NUM_THREADS
        self.threads = available if threads is None else max(1, min(int(threads), available))
        self.parallel = self.threads > 1 and c * p * s >= parallel_min_work
        self.block = max(8, CACHE_BLOCK_ENTRIES // (c * s))
        if self.parallel:                                 # at least two blocks per thread
            self.block = max(8, min(self.block, -(-p // (2 * self.threads))))
        self._tip_slot = np.full(spec.n_tips, -1, dtype=np.int64)
        self._packed: np.ndarray | None = None          # (K, 1, P, S) tip partials, rebuilt on change

    # ------------------------------------------------------------------ data
    def _tips_changed(self) -> None:
        super()._tips_changed()
        self._packed = None

    def _tips(self) -> tuple[np.ndarray, np.ndarray]:
        """(tip slot per tip, packed tip partials (K, 1, P, S)); K >= 1 (a zero row when none)."""
        if self._packed is None:
            rows = [tp for tp in self.tip_partials if tp is not None]
            slot = np.full(self.spec.n_tips, -1, dtype=np.int64)
            slot[[t for t, tp in enumerate(self.tip_partials) if tp is not None]] = np.arange(len(rows))
            shape = (1, self.spec.n_patterns, self.spec.n_states)
            packed = np.stack(rows)[:, None] if rows else np.zeros((1,) + shape)
            self._tip_slot, self._packed = slot, np.ascontiguousarray(packed)
        return self._tip_slot, self._packed

    # ------------------------------------------------------------------ partials
    def update_partials(self, ops: np.ndarray) -> None:
        ops = np.ascontiguousarray(ops, dtype=np.int64).reshape(-1, 7)
        if not len(ops):
            return
        n_tips = self.spec.n_tips
        dest = ops[:, 0]
        assert np.all(dest >= n_tips) and not np.any((dest == ops[:, 3]) | (dest == ops[:, 5])), "bad dest in ops"
        slot, packed = self._tips()
        args = (ops, self.partials, self.tip_states, slot, packed, self.matrices, self.scale, n_tips, self.block)
        if not self.parallel:
            k.update_partials_serial(*args)
            return
        before = numba.get_num_threads()
        numba.set_num_threads(self.threads)
        try:
            k.update_partials_parallel(*args)
        finally:
            numba.set_num_threads(before)

    # ------------------------------------------------------------------ scaling
    def reset_scale(self, cumulative: int) -> None:
        self.scale[cumulative] = 0.0

    def accumulate_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        idx = np.ascontiguousarray(scale_indices, dtype=np.int64).ravel()
        if idx.size:
            k.add_scales(self.scale, int(cumulative), idx, 1.0)

    def remove_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        idx = np.ascontiguousarray(scale_indices, dtype=np.int64).ravel()
        if idx.size:
            k.add_scales(self.scale, int(cumulative), idx, -1.0)

    # ------------------------------------------------------------------ root
    def _child_args(self, root_partials: np.ndarray, child: int, child_matrix: int) -> tuple:
        """(kind, states, partials, category stride, matrix) of the root's edge child (kind 0: none)."""
        n_tips = self.spec.n_tips
        if child == NONE:
            dummy = np.zeros((self.spec.n_categories, self.spec.n_states, self.spec.n_states))
            return 0, self.tip_states[0] if n_tips else np.zeros(0, np.uint8), root_partials, 0, dummy
        matrix = self.matrices[child_matrix]
        if child >= n_tips:
            return 2, self.tip_states[0], self.partials[child - n_tips], 1, matrix
        slot, packed = self._tips()
        if slot[child] < 0:
            return 1, self.tip_states[child], root_partials, 0, matrix
        return 2, self.tip_states[child], packed[slot[child]], 0, matrix

    def site_log_likelihoods(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                             cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> np.ndarray:
        r = self.partials[root - self.spec.n_tips]
        kind, states, x, xs, matrix = self._child_args(r, child, child_matrix)
        pinvar = float(pinvar)
        compat = self._invariant_site_compat() if pinvar > 0.0 else np.zeros((1, 1))
        use_scale = cumulative_scale != NONE
        scale_row = self.scale[cumulative_scale] if use_scale else self.pattern_weights
        out = np.empty(self.spec.n_patterns)
        k.site_log_likelihoods(r, kind, states, x, xs, matrix, np.ascontiguousarray(freqs, dtype=np.float64),
                               np.ascontiguousarray(weights, dtype=np.float64), pinvar, scale_row, use_scale,
                               compat, out)
        return out

    def root_log_likelihood(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                            cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> float:
        ln = self.site_log_likelihoods(root, freqs, weights, pinvar, cumulative_scale, child, child_matrix)
        return float(k.weighted_sum(self.pattern_weights, ln))


def compiled_factory(*, threads: int | None = None, parallel_min_work: int = PARALLEL_MIN_WORK):
    """A backend factory (InstanceSpec -> CompiledBackend) with these options, for select.py."""

    def make(spec: InstanceSpec) -> CompiledBackend:
        return CompiledBackend(spec, threads=threads, parallel_min_work=parallel_min_work)

    return make
