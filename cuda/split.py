"""One likelihood instance whose patterns do not fit one GPU: contiguous pattern slices, each a
CudaBackend of its own, placed round-robin over the GPUs this process may use.

Set-up and compute calls go to every slice (arguments along the pattern axis are cut), so each GPU
queues its share of a flush asynchronously and all of them work at once; root log likelihoods are the
slices' sums, added with math.fsum in slice order (every call gives the same bits). This is the in-process
twin of mbgpu.mpi.sitesplit (slices over ranks, summed by allgather). `slices_needed` decides how many
slices a plan needs from the memory one slice may use: a device's free memory, or a smaller limit that
tests and benchmarks set to exercise the split on one GPU. pycuda is imported inside functions only.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from mbgpu.patterns import pattern_slice

from .memory_plan import RESERVE_BYTES, plan_instance


def slices_needed(spec, precision: str, budget: int, chains: int = 1) -> int:
    """The fewest pattern slices whose instance fits in `budget` bytes each (RESERVE_BYTES kept free);
    1 when the whole instance fits, and at most one slice per pattern."""
    room = budget - RESERVE_BYTES
    for k in _candidates(spec.n_patterns):
        biggest = -(-spec.n_patterns // k)
        if plan_instance(replace(spec, n_patterns=biggest), precision).total <= room:
            return k
    return spec.n_patterns


def _candidates(n_patterns: int):
    """1, 2, 3, ... up to 64, then doubling: slice counts worth trying."""
    k = 1
    while k < n_patterns:
        yield k
        k = k + 1 if k < 64 else 2 * k
    yield n_patterns


class PatternSplit:
    """A CudaBackend-like instance over `len(parts)` pattern slices; `parts[i]` holds patterns cuts[i]."""

    def __init__(self, spec, make_part, devices, k: int):
        self.spec = spec
        self.cuts = [slice(*pattern_slice(spec.n_patterns, k, i)) for i in range(k)]
        self.parts = [make_part(replace(spec, n_patterns=cut.stop - cut.start), devices[i % len(devices)])
                      for i, cut in enumerate(self.cuts)]

    def __getattr__(self, name):
        """Attributes that do not depend on the slices (precision, dtype, dev, ...) from the first."""
        parts = self.__dict__.get("parts")
        if not parts or name == "core_flushes":     # a slice's compiled flush would be the slice's alone
            raise AttributeError(name)
        return getattr(parts[0], name)

    # -- data along the pattern axis
    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        for part, cut in zip(self.parts, self.cuts):
            part.set_tip_states(tip, np.asarray(states)[cut])

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        for part, cut in zip(self.parts, self.cuts):
            part.set_tip_partials(tip, np.asarray(partials)[cut])

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        for part, cut in zip(self.parts, self.cuts):
            part.set_pattern_weights(np.asarray(weights, dtype=np.float64)[cut])

    # -- the same call on every slice
    def _each(self, name: str, *args, **kwargs) -> list:
        return [getattr(part, name)(*args, **kwargs) for part in self.parts]

    def set_category_rates(self, rates) -> None:
        self._each("set_category_rates", rates)

    def update_transition_matrices(self, eigen, matrix_indices, edge_lengths) -> None:
        self._each("update_transition_matrices", eigen, matrix_indices, edge_lengths)

    def update_transition_matrices_many(self, groups) -> None:
        self._each("update_transition_matrices_many", groups)

    def set_transition_matrices(self, matrix_indices, matrices) -> None:
        self._each("set_transition_matrices", matrix_indices, matrices)

    def update_partials(self, ops) -> None:
        self._each("update_partials", ops)

    def update_partials_levels(self, ops, counts) -> None:
        self._each("update_partials_levels", ops, counts)

    def reset_scale(self, cumulative: int) -> None:
        self._each("reset_scale", cumulative)

    def accumulate_scale(self, cumulative: int, scale_indices) -> None:
        self._each("accumulate_scale", cumulative, scale_indices)

    def remove_scale(self, cumulative: int, scale_indices) -> None:
        self._each("remove_scale", cumulative, scale_indices)

    def scale_jobs(self, jobs) -> None:
        self._each("scale_jobs", jobs)

    def synchronize(self) -> None:
        self._each("synchronize")

    # -- flushes: every slice queues the same flush, then the sums are added
    def batch_launch(self, *args, **kwargs) -> list:
        return self._each("batch_launch", *args, **kwargs)

    def launch_packed(self, flush, tag: str = "") -> list:
        return self._each("launch_packed", flush, tag)

    def batch_fetch(self, handles: list) -> list[float]:
        per_part = [part.batch_fetch(h) for part, h in zip(self.parts, handles)]
        return [math.fsum(values) for values in zip(*per_part)]

    # -- results
    def root_log_likelihood(self, *args) -> float:
        return math.fsum(self._each("root_log_likelihood", *args))

    def root_log_likelihoods(self, calls) -> list[float]:
        calls = list(calls)
        return [math.fsum(values) for values in zip(*self._each("root_log_likelihoods", calls))]

    def site_log_likelihoods(self, *args) -> np.ndarray:
        return np.concatenate(self._each("site_log_likelihoods", *args))

    def partials_of(self, buffer: int) -> np.ndarray:
        return np.concatenate(self._each("partials_of", buffer), axis=1)

    def scale_of(self, index: int) -> np.ndarray:
        return np.concatenate(self._each("scale_of", index))
