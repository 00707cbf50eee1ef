"""Batched generations: every chain's proposal is queued, then ONE flush per pattern set evaluates all of
them (engine.likelihood.batched.SharedInstance), then every chain decides.

`LanePartition` is the batched twin of engine.sampler.incremental.IncrementalPartition (same
attributes and calls: `propose`, `accept`, `reject`, `lnl`, `tree`, `model`, `mult`), living in a lane of
a SharedInstance that all chains of the analysis share. `stage()` finds the dirty nodes (vectorised
over the parent arrays), flips their slots and queues the work without computing; `flush_chains()`
evaluates every queued job of every pattern set and hands each lane its log likelihood. `propose()`
is stage + flush (one chain alone: the start state, checkpoint restores).

MBGPU_SAMPLER=chain selects the per-chain path (IncrementalPartition, one instance per chain) instead.
"""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

from engine.errors import CommandError
from engine.likelihood.batched import LaneJob, SharedInstance
from engine.likelihood.protocol import NONE
from engine.models import build_model
from engine.tree import Tree


def sampler_mode(env=None) -> str:
    """'batched' (default) or 'chain' from MBGPU_SAMPLER."""
    value = (os.environ if env is None else env).get("MBGPU_SAMPLER", "batched").strip().lower() or "batched"
    if value not in ("batched", "chain"):
        raise CommandError("MBGPU_SAMPLER must be batched or chain, not %r" % value)
    return value


def kids_table(parent: np.ndarray) -> np.ndarray:
    """int64[n, 3]: each node's children in increasing order (Tree.children()), -1 where absent."""
    n = parent.size
    order = np.argsort(parent, kind="stable")
    ps = parent[order]
    keep = ps >= 0
    order, ps = order[keep], ps[keep]
    rank = np.arange(ps.size) - np.searchsorted(ps, ps, side="left")
    assert rank.size == 0 or rank.max() < 3, "a node with more than three children"
    table = np.full((n, 3), -1, dtype=np.int64)
    table[ps, rank] = order
    return table


def ancestor_closure(parent, seeds, n_tips: int) -> tuple[list[int], list[int]]:
    """Internal nodes on the paths from `seeds` to the root, and their depths (root 0)."""
    depth: dict[int, int] = {}
    for s in seeds:
        path, v = [], s
        while v >= 0 and v not in depth:
            path.append(v)
            v = parent[v]
        d = depth[v] if v >= 0 else -1
        for u in reversed(path):
            d += 1
            depth[u] = d
    nodes = [v for v in depth if v >= n_tips]
    return nodes, [depth[v] for v in nodes]


class _Topology:
    """Children table and root of a tree; every internal node child-first with depths (built on demand)."""

    def __init__(self, tree: Tree):
        self.key = tree.parent.tobytes()
        self.kids = kids_table(tree.parent)
        self.root = int(np.flatnonzero(tree.parent < 0)[0])
        assert self.kids[self.root, 2] >= 0, "chains keep unrooted trees with a trifurcating root"
        self._parent, self._n_tips = tree.parent, tree.n_tips
        self._full = None

    def full(self) -> tuple[np.ndarray, np.ndarray]:
        """(internal nodes deepest first, their depths)."""
        if self._full is None:
            depth = _depths(self._parent.tolist(), self.root)
            internal = np.arange(self._n_tips, self._parent.size)
            order = internal[np.argsort(-depth[internal], kind="stable")]
            self._full = (order, depth[order])
        return self._full


def _depths(parent: list, root: int) -> np.ndarray:
    """Depth of every node (root 0): one walk with memoisation."""
    depth = [-1] * len(parent)
    depth[root] = 0
    for s in range(len(parent)):
        path, v = [], s
        while depth[v] < 0:
            path.append(v)
            v = parent[v]
        d = depth[v]
        for u in reversed(path):
            d += 1
            depth[u] = d
    return np.array(depth, dtype=np.int64)


class LanePartition:
    """One chain's lane of a SharedInstance: double-buffered slots, staged proposals, flushed lnL."""

    def __init__(self, shared: SharedInstance, model, rate_multiplier: float, weights: np.ndarray):
        self.shared, self.layout = shared, shared.layout
        self.lane = shared.new_lane()
        self.n_tips = self.layout.n_tips
        self.weights = np.asarray(weights, dtype=np.float64)
        n = self.layout.n_nodes
        self.part_slot = np.zeros(n, dtype=np.int64)
        self.mat_slot = np.zeros(n, dtype=np.int64)
        v, zero = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        # slot-0 indices of every node in this lane: index = base[v] + slot[v] (tips never flip)
        self._buf0 = self.layout.buffers(self.lane, v, zero)
        self._mat0 = self.layout.matrices(self.lane, v, zero)
        self._scale0 = self.layout.scales(self.lane, v, zero)
        self.model, self.mult = model, float(rate_multiplier)
        self.tree: Tree | None = None
        self.lnl = 0.0
        self._saved = None
        self._topo: _Topology | None = None
        self._mkv = self._mkv_dummy() if model.spec.coding == "variable" else None

    def _mkv_dummy(self):
        """The all-0/all-1 binary patterns (Mkv correction), on the numpy backend: two patterns."""
        from engine.likelihood.evaluate import PartitionLikelihood
        from engine.likelihood.numpy_backend import NumpyBackend

        binary = build_model(replace(self.model.spec, n_states=2, coding="all"))
        tips = np.zeros((self.n_tips, 2, 2))
        tips[:, 0, 0] = tips[:, 1, 1] = 1.0
        return PartitionLikelihood(tips, np.ones(2), binary, self.mult, NumpyBackend, double_buffer=False)

    # -- proposals ---------------------------------------------------------------------------
    def propose(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> float:
        """ln L for `tree` (new model / multiplier if given) now: stage, then flush the shared instance."""
        self.stage(tree, model, rate_multiplier)
        finish_flush(self.shared)
        return self.lnl

    def stage(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> None:
        """Queue the work of a proposal in the inactive slots; `lnl` is valid after the next flush."""
        self._saved = (self.part_slot.copy(), self.mat_slot.copy(), self.tree, self.model, self.mult, self.lnl,
                       self._topo)
        full = self.tree is None or model is not None or rate_multiplier is not None
        if model is not None:
            self.model = model
        if rate_multiplier is not None:
            self.mult = float(rate_multiplier)
        old = self.tree
        topo = self._topo if self._topo is not None and self._topo.key == tree.parent.tobytes() else _Topology(tree)
        mat_dirty, nodes, depths = self._dirty(old, tree, topo, full)
        self.shared.enqueue(self._job(tree, topo, mat_dirty, nodes, depths))
        self.tree, self._topo = tree, topo

    def accept(self) -> None:
        self._saved = None

    def reject(self) -> None:
        assert self._saved is not None, "reject() without a pending proposal"
        self.part_slot, self.mat_slot, self.tree, self.model, self.mult, self.lnl, self._topo = self._saved
        self._saved = None

    def finish(self, root_lnl: float) -> None:
        """Take the flushed root log likelihood (Mkv-corrected for coding=variable)."""
        lnl = root_lnl
        if self._mkv is not None:
            self._mkv.rate_multiplier = self.mult
            p_unobserved = float(np.exp(self._mkv.site_log_likelihoods(self.tree)).sum())
            lnl -= float(self.weights.sum()) * np.log1p(-p_unobserved)
        self.lnl = float(lnl)

    # -- internals -----------------------------------------------------------------------------
    def _dirty(self, old: Tree | None, tree: Tree, topo: _Topology, full: bool):
        """(matrix-dirty nodes, partial-dirty internal nodes child-first, their depths)."""
        edges = tree.parent >= 0
        if full:
            return (np.flatnonzero(edges),) + topo.full()
        mat_dirty = np.flatnonzero(edges & (old.brlen != tree.brlen))
        moved = np.flatnonzero(old.parent != tree.parent)
        seeds = set(tree.parent[mat_dirty].tolist())
        if moved.size:
            seeds.update(tree.parent[moved].tolist())
            seeds.update(old.parent[moved].tolist())
        seeds = [s for s in seeds if s >= self.n_tips]
        nodes, depths = ancestor_closure(tree.parent.tolist(), seeds, self.n_tips)
        nodes, depths = np.array(nodes, dtype=np.int64), np.array(depths, dtype=np.int64)
        order = np.argsort(-depths, kind="stable")
        return mat_dirty, nodes[order], depths[order]

    def _job(self, tree: Tree, topo: _Topology, mat_dirty: np.ndarray, nodes: np.ndarray, depths: np.ndarray):
        lay, m = self.layout, self.model
        ps, ms, buf0, mat0 = self.part_slot, self.mat_slot, self._buf0, self._mat0
        ms[mat_dirty] ^= 1
        mat_idx = mat0[mat_dirty] + ms[mat_dirty]
        ps[nodes] ^= 1
        c1, c2 = topo.kids[nodes, 0], topo.kids[nodes, 1]
        ops = np.empty((nodes.size, 7), dtype=np.int64)
        ops[:, 0] = buf0[nodes] + ps[nodes]
        ops[:, 1] = self._scale0[nodes] + ps[nodes]
        ops[:, 2] = NONE
        ops[:, 3] = buf0[c1] + ps[c1]
        ops[:, 4] = mat0[c1] + ms[c1]
        ops[:, 5] = buf0[c2] + ps[c2]
        ops[:, 6] = mat0[c2] + ms[c2]
        levels = (depths.max() - depths) if depths.size else depths
        internal = slice(self.n_tips, tree.n_nodes)
        cum = lay.cumulative(self.lane)
        root, third = topo.root, int(topo.kids[topo.root, 2])
        root_call = (int(buf0[root] + ps[root]), m.frequencies, m.category_weights, m.pinvar, cum,
                     int(buf0[third] + ps[third]), int(mat0[third] + ms[third]))
        return LaneJob(self.lane, m.eigen, m.category_rates, mat_idx, tree.brlen[mat_dirty] * self.mult, ops, levels,
                       self._scale0[internal] + ps[internal], cum, root_call)


def finish_flush(shared: SharedInstance) -> None:
    """Flush one shared instance and hand every queued lane its log likelihood."""
    _hand_out(shared, shared.flush())


def _hand_out(shared: SharedInstance, values) -> None:
    for lane, value in values:
        shared.lanes[lane].finish(value)


def _shared_of(chains) -> list[SharedInstance]:
    seen = {}
    for chain in chains:
        for part in chain.parts:
            shared = getattr(part.inc, "shared", None)
            if shared is not None and shared.queue:
                seen[id(shared)] = shared
    return list(seen.values())


def launch_chains(chains, tag: str = "") -> list:
    """Start the queued work of every pattern set used by `chains`; the tickets for collect_chains."""
    return [(shared, shared.launch(tag)) for shared in _shared_of(chains)]


def collect_chains(tickets) -> None:
    """Wait for launched work and hand every lane its log likelihood."""
    for shared, ticket in tickets:
        _hand_out(shared, shared.collect(ticket))


def flush_chains(chains) -> None:
    """Evaluate the queued work of every pattern set used by `chains` (one flush per instance)."""
    collect_chains(launch_chains(chains))


def pipeline_groups(env=None) -> int:
    """MBGPU_PIPELINE: in how many groups a generation's chains propose and launch (default 1)."""
    value = (os.environ if env is None else env).get("MBGPU_PIPELINE", "1").strip() or "1"
    if not value.isdigit() or int(value) < 1:
        raise CommandError("MBGPU_PIPELINE must be a positive integer, not %r" % value)
    return int(value)


def step_generation(runs, ranks, opts, groups: int | None = None) -> None:
    """One generation of every chain: propose, evaluate, decide (each chain's draws in the usual order).

    The chains propose in `groups` groups; each group's likelihood work is launched as soon as it is
    queued, so the device computes one group while the host proposes the next. Then every chain
    decides at its heat. groups=1: one flush for all chains.
    """
    from engine.sampler.swaps import heat

    chains = [c for run in runs for c in run]
    k = max(1, min(groups or pipeline_groups(), len(chains)))
    bounds = [len(chains) * g // k for g in range(k + 1)]
    pending, tickets = [], []
    for g in range(k):
        part = chains[bounds[g]:bounds[g + 1]]
        pending += [c.begin_step() for c in part]
        tickets.append(launch_chains(part, str(g)))
    for t in tickets:
        collect_chains(t)
    pending = iter(pending)
    for run, rank in zip(runs, ranks):
        for pos, chain in enumerate(run):
            chain.end_step(next(pending), heat(rank[pos], opts.temp), opts.tunefreq, opts.autotune)


class PartFactory:
    """Builds each chain's per-pattern-set likelihood: lanes of shared instances, or per-chain ones."""

    def __init__(self, factory, n_tips: int, n_lanes: int, mode: str | None = None):
        self.factory, self.n_tips, self.n_lanes = factory, n_tips, n_lanes
        self.mode = mode or sampler_mode()
        self.shared: dict[int, SharedInstance] = {}

    def new(self, k: int, tips, weights, model, fixed_mult: float):
        """The likelihood of pattern set k for one more chain."""
        if self.mode == "chain":
            from engine.sampler.incremental import IncrementalPartition

            return IncrementalPartition(tips, weights, model, fixed_mult, self.factory, self.n_tips)
        shared = self.shared.get(k)
        if shared is None:
            shared = self.shared[k] = SharedInstance(tips, weights, model.n_categories, self.n_lanes, self.factory)
        part = LanePartition(shared, model, fixed_mult, weights)
        shared.lanes[part.lane] = part
        return part
