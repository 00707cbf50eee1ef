"""Batching helpers of the CUDA likelihood backend: dependency levels of operations, many chains in one
instance, and the packed job arrays of the batched calls. Pure numpy: testable without a GPU.

One backend instance can hold the buffers of many chains of one partition (`ChainSlots`): tips are
shared, each chain owns a block of partials, matrices and scale buffers. The chains' operations are
concatenated into one int64 array; `schedule_levels` groups them into levels that run as one launch
each, so a generation costs one launch per tree level, not one per node per chain.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from mbgpu.likelihood.evaluate import NodeSlots, tree_operations
from mbgpu.likelihood.protocol import NONE

SCALE_JOB_WIDTH = 5      # cumulative, reset, first, count, sign
ROOT_JOB_WIDTH = 4       # root buffer, cumulative scale, edge child, edge child matrix
SPAN_WIDTH = 3           # a job's first op, op count, weight (likelihood.cuh; mbgpu.core.device_division)


def schedule_levels(ops: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """(permutation of the rows, operations per level) so that each level only depends on earlier ones.

    A row goes one level after every earlier row that writes what it reads or writes (partials or scale
    buffers), or that reads what it writes; rows keep their order within a level.
    """
    ops = np.asarray(ops, dtype=np.int64).reshape(-1, 7)
    last_write: dict = {}       # keys: buffer b >= 0, scale buffer s as -2 - s
    last_read: dict = {}
    levels = np.zeros(len(ops), dtype=np.int64)
    lw, lr = last_write.get, last_read.get
    for i, (dest, sw, sr, c1, _m1, c2, _m2) in enumerate(ops.tolist()):
        reads = (c1, c2, -2 - sr) if sr != NONE else (c1, c2)
        writes = (dest, -2 - sw) if sw != NONE else (dest,)
        level = max(lw(k, -1) for k in reads + writes) + 1
        level = max(level, max(lr(k, -1) for k in writes) + 1)
        levels[i] = level
        for k in writes:
            last_write[k] = level
        for k in reads:
            if lr(k, -1) < level:
                last_read[k] = level
    order = np.argsort(levels, kind="stable")
    counts = np.bincount(levels).tolist() if len(ops) else []
    return order, [c for c in counts if c]


@dataclass(frozen=True)
class ChainSlots:
    """Index spaces of `n_chains` chains in one instance: NodeSlots per chain, shifted by chain blocks."""

    n_tips: int
    n_chains: int
    per_node: int = 2

    @cached_property
    def node_slots(self) -> NodeSlots:
        return NodeSlots(self.n_tips, self.per_node)

    @cached_property
    def per_chain(self) -> tuple[int, int, int]:
        """Partial buffers, matrices and scale buffers of one chain."""
        spec = self.node_slots.instance_spec(1, 4, 1)
        return spec.n_partials, spec.n_matrices, spec.n_scale_buffers

    def _per_chain(self) -> tuple[int, int, int]:
        return self.per_chain

    def instance_spec(self, n_patterns: int, n_states: int, n_categories: int):
        """One InstanceSpec holding every chain's buffers (tips once)."""
        n_p, n_m, n_s = self._per_chain()
        one = self.node_slots.instance_spec(n_patterns, n_states, n_categories)
        return type(one)(n_tips=self.n_tips, n_partials=n_p * self.n_chains, n_patterns=n_patterns,
                         n_states=n_states, n_categories=n_categories, n_matrices=n_m * self.n_chains,
                         n_scale_buffers=n_s * self.n_chains)

    def buffer(self, chain: int, v: int, slot: int = 0) -> int:
        if v < self.n_tips:
            return v
        return self.node_slots.buffer(v, slot) + chain * self._per_chain()[0]

    def matrix(self, chain: int, v: int, slot: int = 0) -> int:
        return self.node_slots.matrix(v, slot) + chain * self._per_chain()[1]

    def scale(self, chain: int, v: int, slot: int = 0) -> int:
        return self.node_slots.scale(v, slot) + chain * self._per_chain()[2]

    def cumulative_scale(self, chain: int, slot: int = 0) -> int:
        return self.node_slots.cumulative_scale(slot) + chain * self._per_chain()[2]

    def tree_operations(self, tree, chain: int, scaling=True, slot: int = 0):
        """tree_operations(...) of one chain with its indices shifted into the chain's block."""
        ops, scales, root, child, cm = tree_operations(tree, self.node_slots, scaling, slot)
        n_p, n_m, n_s = self._per_chain()
        ops = ops.copy()
        for col, shift in ((0, n_p), (3, n_p), (5, n_p), (1, n_s), (2, n_s), (4, n_m), (6, n_m)):
            vals = ops[:, col]
            if col in (0, 3, 5):
                mask = vals >= self.n_tips
            else:
                mask = vals != NONE
            vals[mask] += chain * shift
        scales = scales + chain * n_s
        root = root + chain * n_p
        if child != NONE:
            child = child + chain * n_p if child >= self.n_tips else child
            cm = cm + chain * n_m
        return ops, scales, root, child, cm


def _ints(x) -> list:
    """A flat list of Python ints from a list or an integer array (lists pass through)."""
    return x.ravel().tolist() if isinstance(x, np.ndarray) else list(x)


def _scale_sections(jobs) -> tuple[list, list]:
    """The scale job table (SCALE_JOB_WIDTH ints per job, flat) and the index list (at least one entry)."""
    table, flat = [], []
    for cumulative, reset, indices, sign in jobs:
        idx = _ints(indices)
        table += (cumulative, 1 if reset else 0, len(flat), len(idx), 1 if sign >= 0 else -1)
        flat += idx
    return table, flat or [0]


def _root_sections(calls) -> tuple[list, list]:
    """The root job table (ROOT_JOB_WIDTH ints per call, flat) and each call's parameters (freqs, category
    weights, pinvar, log(1 - pinvar)) as float64 pieces."""
    import math

    table, params = [], []
    for root, freqs, weights, pinvar, cumulative, child, child_matrix in calls:
        table += (root, cumulative, child, child_matrix if child != NONE else 0)
        pinvar = float(pinvar)
        params += [np.asarray(freqs, dtype=np.float64).ravel(), np.asarray(weights, dtype=np.float64).ravel(),
                   np.array([pinvar, math.log1p(-pinvar) if pinvar > 0.0 else 0.0])]
    return table, params


def scale_job_arrays(jobs) -> tuple[np.ndarray, np.ndarray]:
    """Pack [(cumulative, reset, indices, sign)] into the int64 job table and the flat index array."""
    table, flat = _scale_sections(jobs)
    return np.array(table, dtype=np.int64).reshape(-1, SCALE_JOB_WIDTH), np.array(flat, dtype=np.int64)


def root_job_arrays(calls, n_states: int, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """Pack root calls (root, freqs, weights, pinvar, cumulative, child, child_matrix) into job tables."""
    table, params = _root_sections(calls)
    params = np.concatenate(params) if params else np.zeros(0)
    return (np.array(table, dtype=np.int64).reshape(-1, ROOT_JOB_WIDTH),
            params.reshape(len(calls), n_states + n_categories + 2))


@dataclass(frozen=True)
class PackedFlush:
    """A batched flush as one int64 blob: int sections (matrix indices, their eigensystem numbers, ops,
    scale table, scale indices, root jobs, job spans; lengths in `sizes`), then the reals viewed as
    int64 (edge lengths, `n_eig` eigensystems, their category rates, root parameters, which start
    `params_at` reals in). Ops come either grouped by dependency level (`counts` per level, no job
    spans: one launch per level) or job by job, each child-first, with (first op, count, weight) per job
    in the spans section (one launch for all of them: update_partials_jobs, which shares the grid out
    by weight). `paired`: scale job j and root
    job j name the same cumulative buffer (the compiled core's flushes), so the root kernel sums the
    scale rows itself and the scale launch is saved."""

    blob: np.ndarray
    sizes: list
    n_mat: int
    params: np.ndarray
    params_at: int
    n_eig: int
    counts: list
    paired: bool = False


def pack_flush(matrix_groups, ops: np.ndarray, scale_jobs, root_calls, n_states: int,
               n_categories: int, counts=()) -> PackedFlush:
    """Pack a whole flush (CudaBackend.batch_launch's arguments) for ONE host-to-device copy; each
    section is built as a list and converted once."""
    idx, lengths, eig_of, eigens, rates = [], [], [], [], []
    for e, (eigen, cat_rates, indices, edges) in enumerate(matrix_groups):
        got = _ints(indices)
        idx += got
        eig_of += [e] * len(got)
        lengths += edges.ravel().tolist() if isinstance(edges, np.ndarray) else edges
        eigens.append(eigen.packed)
        rates.append(np.asarray(cat_rates, dtype=np.float64).ravel())
    scale_table, scale_flat = _scale_sections(scale_jobs)
    root_table, params = _root_sections(root_calls)
    ops = np.ascontiguousarray(ops, dtype=np.int64).reshape(-1, 7)
    sizes = [len(idx), len(eig_of), ops.size, len(scale_table), len(scale_flat), len(root_table), 0]
    params = np.concatenate(params) if params else np.zeros(0)
    reals = np.concatenate([np.array(lengths, dtype=np.float64)] + eigens + rates + [params])
    blob = np.concatenate([np.array(idx + eig_of, dtype=np.int64), ops.ravel(),
                           np.array(scale_table + scale_flat + root_table, dtype=np.int64), reals.view(np.int64)])
    return PackedFlush(blob, sizes, int(sizes[0]), params.reshape(len(root_calls), n_states + n_categories + 2),
                       reals.size - params.size, len(matrix_groups), list(counts))


def unpack_flush(flush: PackedFlush, n_states: int, n_categories: int) -> dict:
    """The sections of a packed flush as arrays (the inverse of pack_flush; tests and host replays):
    mat_index, eigen_of, ops (n, 7), counts, scale_table (n, 5), scale_index, root_jobs (n, 4), spans
    (n, 3), lengths,
    eigens (n_eig, S + 2 S^2), rates (n_eig, C), params (n_roots, S + C + 2)."""
    s, c = n_states, n_categories
    ints = np.split(flush.blob[:sum(flush.sizes)], np.cumsum(flush.sizes)[:-1])
    reals = flush.blob[sum(flush.sizes):].view(np.float64)
    n_mat, n_eig = flush.n_mat, flush.n_eig
    return {"mat_index": ints[0], "eigen_of": ints[1], "ops": ints[2].reshape(-1, 7), "counts": list(flush.counts),
            "scale_table": ints[3].reshape(-1, SCALE_JOB_WIDTH), "scale_index": ints[4],
            "root_jobs": ints[5].reshape(-1, ROOT_JOB_WIDTH), "spans": ints[6].reshape(-1, SPAN_WIDTH), "lengths": reals[:n_mat],
            "eigens": reals[n_mat:n_mat + n_eig * (s + 2 * s * s)].reshape(n_eig, s + 2 * s * s),
            "rates": reals[n_mat + n_eig * (s + 2 * s * s):flush.params_at].reshape(n_eig, c),
            "params": reals[flush.params_at:].reshape(-1, s + c + 2)}
