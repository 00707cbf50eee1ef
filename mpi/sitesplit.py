"""Site decomposition: the patterns of every partition split over the K ranks of a chain group.

Each rank of a group builds its backend for its contiguous slice of patterns only (so data too big for
one GPU fits on K), runs the same chains with the same random streams, and gets the whole log
likelihood from one `allgather` of the K partial sums per evaluation, added with `math.fsum` in rank
order: every member gets the same bits, so the K copies of a chain make the same decisions. With K = 1
no wrapper is used at all.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from mbgpu.patterns import pattern_slice


class SplitBackend:
    """A likelihood backend for patterns [lo, hi) of a partition; root log likelihoods sum over the group.

    Every call that does not depend on the pattern axis goes to the inner backend unchanged; so do the
    capability probes (`hasattr(backend, "batch_launch")`), so a batched CUDA backend stays batched. The
    calls that return root log likelihoods (`root_log_likelihood`, `root_log_likelihoods`, `batch_fetch`)
    add the group's partial sums: one allgather per call, i.e. per evaluation or per batched flush. A
    member whose slice would be empty (fewer patterns than ranks) holds one pattern with weight 0.
    """

    def __init__(self, factory, spec, group):
        self.spec, self.group = spec, group
        lo, hi = pattern_slice(spec.n_patterns, group.Get_size(), group.Get_rank())
        self.empty = hi == lo
        self.cut = slice(0, 1) if self.empty else slice(lo, hi)
        self.inner = factory(replace(spec, n_patterns=self.cut.stop - self.cut.start))

    def __getattr__(self, name):
        if name == "core_flushes":       # the compiled flush path reads the slice's sums alone: not here
            raise AttributeError(name)
        target = getattr(self.__dict__["inner"], name)   # AttributeError when the inner backend lacks it
        if name in ("batch_fetch", "root_log_likelihoods"):
            return lambda *args, **kwargs: self.sum_each(target(*args, **kwargs))
        return target

    def pars_reduction(self) -> np.ndarray:
        """How the compiled ParsSPR splits its Fitch pass over the group (mbgpu.mpi.native_allreduce)."""
        from mbgpu.mpi.native_allreduce import int64_sum

        return int64_sum(self.group)

    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        self.inner.set_tip_states(tip, np.asarray(states)[self.cut])

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        self.inner.set_tip_partials(tip, np.asarray(partials)[self.cut])

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        mine = np.asarray(weights, dtype=np.float64)[self.cut]
        self.inner.set_pattern_weights(np.zeros(1) if self.empty else mine)

    def site_log_likelihoods(self, *args, **kwargs) -> np.ndarray:
        """Per-pattern values of the whole partition (gathered from the group, in pattern order)."""
        mine = np.zeros(0) if self.empty else np.asarray(self.inner.site_log_likelihoods(*args, **kwargs),
                                                         dtype=np.float64)
        return np.concatenate(self.group.allgather(mine))

    def root_log_likelihood(self, *args, **kwargs) -> float:
        """The partition's log likelihood: one allgather of the K partial sums, added exactly."""
        mine = 0.0 if self.empty else float(self.inner.root_log_likelihood(*args, **kwargs))
        return _exact_sum(self.group.allgather(mine))

    def sum_each(self, values) -> list[float]:
        """Many root log likelihoods at once (a batched flush): one allgather for all of them."""
        mine = [0.0 if self.empty else float(v) for v in values]
        parts = self.group.allgather(mine)
        return [_exact_sum(column) for column in zip(*parts)]


def _exact_sum(parts) -> float:
    """math.fsum in a fixed order (the same bits on every rank); a plain sum when a part is not finite."""
    parts = [float(p) for p in parts]
    return math.fsum(parts) if all(math.isfinite(p) for p in parts) else float(sum(parts))


def split_factory(factory, group):
    """Wrap a backend factory (InstanceSpec -> backend) so every instance holds this rank's pattern slice."""
    def make(spec):
        return SplitBackend(factory, spec, group)

    return make
