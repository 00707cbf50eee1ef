"""Many chains' likelihood work for one pattern set in ONE backend instance, evaluated in one flush.

A `SharedInstance` holds the buffers of `n_lanes` lanes (a lane = one chain's view of the pattern set;
index spaces as mbgpu.cuda.batch.ChainSlots: tips shared, each lane a block of partials, matrices and
scale buffers). Lanes queue `LaneJob`s (matrices to compute, partial operations with their dependency
level, the scale buffers to sum, the root call); `flush()` evaluates every queued job and returns
the root log likelihoods:

* a backend with `batch_launch`/`batch_fetch` (CUDA) gets ONE host-to-device copy, one matrix launch
  for all lanes, one launch per level of all lanes' operations, one scale launch and one root launch,
  queued without waiting; `collect` then reads the root sums (one small device-to-host copy);
* any other backend (numpy) gets each job's protocol calls in turn, exactly the calls a per-chain
  mbgpu.sampler.incremental.IncrementalPartition makes, so results are bitwise the same.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.likelihood.evaluate import _compact_states
from mbgpu.likelihood.protocol import InstanceSpec


@dataclass(frozen=True)
class LaneLayout:
    """Index arithmetic of NodeSlots (2 slots per node) shifted into lane blocks, vectorised.

    Tip v: buffer v. Internal v, slot s, lane k: buffer n_tips + 2(v - n_tips) + s + k*n_part,
    scale 2(v - n_tips) + s + k*n_scale; matrix of v's branch 2v + s + k*n_mat; the lane's
    cumulative scale buffer 2(n_nodes - n_tips) + k*n_scale (NodeSlots.cumulative_scale(0)).
    """

    n_tips: int
    n_lanes: int

    @property
    def n_nodes(self) -> int:
        return 2 * self.n_tips - 1

    @property
    def n_part(self) -> int:
        return 2 * (self.n_nodes - self.n_tips)

    @property
    def n_mat(self) -> int:
        return 2 * self.n_nodes

    @property
    def n_scale(self) -> int:
        return 2 * (self.n_nodes - self.n_tips + 1)

    def instance_spec(self, n_patterns: int, n_states: int, n_categories: int) -> InstanceSpec:
        return InstanceSpec(n_tips=self.n_tips, n_partials=self.n_part * self.n_lanes, n_patterns=n_patterns,
                            n_states=n_states, n_categories=n_categories, n_matrices=self.n_mat * self.n_lanes,
                            n_scale_buffers=self.n_scale * self.n_lanes)

    def buffers(self, lane: int, v: np.ndarray, slot: np.ndarray) -> np.ndarray:
        inner = self.n_tips + 2 * (v - self.n_tips) + slot + lane * self.n_part
        return np.where(v < self.n_tips, v, inner)

    def matrices(self, lane: int, v: np.ndarray, slot: np.ndarray) -> np.ndarray:
        return 2 * v + slot + lane * self.n_mat

    def scales(self, lane: int, v: np.ndarray, slot: np.ndarray) -> np.ndarray:
        return 2 * (v - self.n_tips) + slot + lane * self.n_scale

    def cumulative(self, lane: int) -> int:
        return 2 * (self.n_nodes - self.n_tips) + lane * self.n_scale


@dataclass
class LaneJob:
    """One lane's queued work: matrices, operations (with levels), scale sum and root call. Lists, made
    into arrays once per flush (`arrays()` for the chain-by-chain path)."""

    lane: int
    eigen: object
    category_rates: np.ndarray
    matrix_indices: list            # int [m]
    edge_lengths: list              # float [m]
    ops: list                       # 7 ints per operation, flat; children before parents
    levels: list                    # int [n], 0 = reads no partial written by this job
    scale_indices: list             # int [k], summed in this order into `cumulative`
    cumulative: int
    root_call: tuple                # (root, freqs, weights, pinvar, cumulative, child, child_matrix)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(matrix indices, edge lengths, ops int64[n, 7], scale indices) as arrays."""
        return (np.array(self.matrix_indices, dtype=np.int64), np.array(self.edge_lengths, dtype=np.float64),
                np.array(self.ops, dtype=np.int64).reshape(-1, 7), np.array(self.scale_indices, dtype=np.int64))


def level_ops(jobs) -> tuple[np.ndarray, list[int]]:
    """Every job's operations in one int64[n, 7] array ordered by level (stable: job order, then each
    job's order), and the count per non-empty level."""
    flat, levels = [], []
    for j in jobs:
        flat += j.ops
        levels += j.levels
    ops = np.array(flat, dtype=np.int64).reshape(-1, 7)
    if not levels:
        return ops, []
    levels = np.array(levels, dtype=np.int64)
    counts = np.bincount(levels)
    return ops[levels.argsort(kind="stable")], counts[counts > 0].tolist()


def batch_mode(backend) -> str | None:
    """'launch' (batch_launch/batch_fetch: one copy, queued launches), 'calls' (the four batched calls:
    a backend without batch_launch, e.g. mbgpu.mpi.sitesplit's) or None (chain by chain, e.g. numpy)."""
    if hasattr(backend, "batch_launch") and hasattr(backend, "batch_fetch"):
        return "launch"
    calls = all(hasattr(backend, name) for name in ("update_transition_matrices_many", "update_partials_levels",
                                                    "scale_jobs", "root_log_likelihoods"))
    return "calls" if calls else None


class SharedInstance:
    """One backend instance for the lanes of one pattern set, with the queue of pending jobs."""

    def __init__(self, tip_partials: np.ndarray, weights: np.ndarray, n_categories: int, n_lanes: int, factory):
        n_tips, n_patterns, n_states = tip_partials.shape
        self.layout = LaneLayout(n_tips, n_lanes)
        self.backend = factory(self.layout.instance_spec(n_patterns, n_states, n_categories))
        self.backend.set_pattern_weights(np.asarray(weights, dtype=np.float64))
        for t in range(n_tips):
            states = _compact_states(tip_partials[t])
            if states is None:
                self.backend.set_tip_partials(t, tip_partials[t])
            else:
                self.backend.set_tip_states(t, states)
        self.batched = batch_mode(self.backend)
        self.queue: list[LaneJob] = []
        self.next_lane = 0
        self.lanes: dict = {}        # lane -> its owner (the sampler routes flushed values with it)

    def new_lane(self) -> int:
        """The index of a lane not handed out yet."""
        assert self.next_lane < self.layout.n_lanes, "more lanes than the instance was built for"
        self.next_lane += 1
        return self.next_lane - 1

    def enqueue(self, job: LaneJob) -> None:
        self.queue.append(job)

    def flush(self) -> list[tuple[int, float]]:
        """Evaluate every queued job; [(lane, root log likelihood)] in queue order."""
        return self.collect(self.launch())

    def launch(self, tag: str = ""):
        """Start evaluating every queued job (a batched backend returns at once; numpy computes here).

        Returns a ticket for `collect`; flushes with different `tag`s may be in flight together.
        """
        jobs, self.queue = self.queue, []
        if not jobs:
            return None
        if self.batched is None:
            return jobs, None, [self._run_one(j) for j in jobs]
        if self.batched == "calls":
            return jobs, None, self._flush_calls(jobs)
        matrices = [(j.eigen, j.category_rates, j.matrix_indices, j.edge_lengths) for j in jobs if j.matrix_indices]
        ops, counts = level_ops(jobs)
        handle = self.backend.batch_launch(matrices, ops, counts,
                                           [(j.cumulative, True, j.scale_indices, 1) for j in jobs],
                                           [j.root_call for j in jobs], tag)
        return jobs, handle, None

    def collect(self, ticket) -> list[tuple[int, float]]:
        """[(lane, root log likelihood)] of a `launch` ticket (waits for the device if needed)."""
        if ticket is None:
            return []
        jobs, handle, values = ticket
        if values is None:
            values = self.backend.batch_fetch(handle)
        return [(j.lane, float(v)) for j, v in zip(jobs, values)]

    def _flush_calls(self, jobs: list[LaneJob]) -> list[float]:
        """The same work as batch_launch through the four batched calls (a backend without batch_launch)."""
        b = self.backend
        arrays = [j.arrays() for j in jobs]
        b.update_transition_matrices_many([(j.eigen, j.category_rates, a[0], a[1]) for j, a in zip(jobs, arrays)
                                           if j.matrix_indices])
        ops, counts = level_ops(jobs)
        if len(ops):
            b.update_partials_levels(ops, counts)
        b.scale_jobs([(j.cumulative, True, a[3], 1) for j, a in zip(jobs, arrays)])
        return b.root_log_likelihoods([j.root_call for j in jobs])

    def _run_one(self, job: LaneJob) -> float:
        """The protocol calls of IncrementalPartition.propose for one job, in the same order."""
        b = self.backend
        mat_idx, lengths, ops, scales = job.arrays()
        b.set_category_rates(job.category_rates)
        if mat_idx.size:
            b.update_transition_matrices(job.eigen, mat_idx, lengths)
        if len(ops):
            b.update_partials(ops)
        b.reset_scale(job.cumulative)
        b.accumulate_scale(job.cumulative, scales)
        return b.root_log_likelihood(*job.root_call)
