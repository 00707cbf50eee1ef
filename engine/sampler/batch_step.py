"""Batched generations: every chain's proposal is queued, then ONE flush per pattern set evaluates all of
them (mbgpu.likelihood.batched.SharedInstance), then every chain decides.

`LanePartition` is the batched twin of mbgpu.sampler.incremental.IncrementalPartition (same
attributes and calls: `propose`, `accept`, `reject`, `lnl`, `tree`, `model`, `mult`), living in a lane of
a SharedInstance that all chains of the analysis share. `stage()` finds the dirty nodes (vectorised
over the parent arrays), flips their slots and queues the work without computing; `flush_chains()`
evaluates every queued job of every pattern set and hands each lane its log likelihood. `propose()`
is stage + flush (one chain alone: the start state, checkpoint restores).

`PartFactory(..., mode="chain")` builds the per-chain path instead (IncrementalPartition, one instance per
chain): the reference the tests compare the batched path with; runs always take the batched path.
"""
from __future__ import annotations

import numpy as np

from mbgpu.core.stepper import CoreStepper, unsupported
from mbgpu.errors import NotImplementedYet
from mbgpu.likelihood.batched import LaneJob, SharedInstance
from mbgpu.likelihood.mkv import model_correction
from mbgpu.likelihood.protocol import NONE
from mbgpu.tree import Tree


SAMPLER_MODES = ("batched", "chain")     # PartFactory's `mode`: lanes of shared instances, or one per chain
PIPELINE_GROUPS = 2                      # step_generation's default `groups` (docs/performance.md)


def kids_table(parent) -> list[list[int]]:
    """Each node's children in increasing order (Tree.children()), padded with -1 to three."""
    kids = [[-1, -1, -1] for _ in range(len(parent))]
    count = [0] * len(parent)
    for v, p in enumerate(parent.tolist() if isinstance(parent, np.ndarray) else parent):
        if p >= 0:
            assert count[p] < 3, "a node with more than three children"
            kids[p][count[p]] = v
            count[p] += 1
    return kids


def deepest_first(parent, seeds) -> tuple[list[int], list[int]]:
    """The nodes on the paths from `seeds` to the root, deepest first, and their depths (root 0); nodes
    of one depth come in the order of the first seeds whose paths reach them."""
    if len(seeds) == 1:                   # one path (a single branch changed): bottom-up is deepest first
        nodes, v = [], seeds[0]
        while v >= 0:
            nodes.append(v)
            v = parent[v]
        return nodes, list(range(len(nodes) - 1, -1, -1))
    depth: dict[int, int] = {}
    nodes = []
    for s in seeds:
        start, v = len(nodes), s
        while v >= 0 and v not in depth:
            nodes.append(v)
            v = parent[v]
        d = (depth[v] if v >= 0 else -1) + len(nodes) - start
        for u in nodes[start:]:           # this path bottom-up: depths d, d - 1, ...
            depth[u] = d
            d -= 1
    nodes.sort(key=depth.__getitem__, reverse=True)          # stable: ties keep the seeds' order
    return nodes, [depth[v] for v in nodes]


class _Topology:
    """Children table and root of a tree; every internal node child-first with depths (built on demand)."""

    def __init__(self, tree: Tree):
        self.key = tree.parent.tobytes()
        self.parent = tree.parent.tolist()
        self.kids = kids_table(self.parent)
        self.root = self.parent.index(-1)
        assert self.kids[self.root][2] >= 0, "chains keep unrooted trees with a trifurcating root"
        self._n_tips = tree.n_tips
        self._full = self._edges = None

    def moved_to(self, tree: Tree, moved: list) -> "_Topology":
        """The topology of `tree`, whose nodes `moved` (and only those) have other parents than here: the
        children of their old and new parents are rebuilt, every other row is shared."""
        new = _Topology.__new__(_Topology)
        new.key, new._n_tips, new._full, new._edges = tree.parent.tobytes(), self._n_tips, None, None
        new.parent = parent = tree.parent.tolist()
        new.kids = kids = self.kids[:]
        for p in {self.parent[v] for v in moved} | {parent[v] for v in moved}:
            if p >= 0:
                got = sorted([c for c in self.kids[p] if c >= 0 and parent[c] == p]
                             + [v for v in moved if parent[v] == p])
                assert len(got) <= 3, "a node with more than three children"
                kids[p] = got + [-1] * (3 - len(got))
        new.root = self.root if parent[self.root] < 0 else parent.index(-1)
        assert kids[new.root][2] >= 0, "chains keep unrooted trees with a trifurcating root"
        return new

    def edges(self) -> list:
        """Every node with a branch above it (all but the root), in order (computed once)."""
        if self._edges is None:
            self._edges = [v for v, p in enumerate(self.parent) if p >= 0]
        return self._edges

    def full(self) -> tuple[list, list]:
        """(internal nodes deepest first, their depths): level by level from the root, each level in
        increasing node order (what a stable sort of the internal nodes by depth gives)."""
        if self._full is None:
            kids, nt = self.kids, self._n_tips
            levels = [[self.root]]
            while True:
                below = [c for v in levels[-1] for c in kids[v] if c >= nt]
                if not below:
                    break
                levels.append(below)
            order, depths = [], []
            for d in range(len(levels) - 1, -1, -1):
                order += sorted(levels[d])
                depths += [d] * len(levels[d])
            self._full = (order, depths)
        return self._full


class LanePartition:
    """One chain's lane of a SharedInstance: double-buffered slots, staged proposals, flushed lnL.

    Slots and index tables are Python lists: a proposal touches ~10 nodes, and list work on them is
    cheaper than numpy calls; the lane's jobs hold lists too, turned into arrays once per flush.
    """

    def __init__(self, shared: SharedInstance, model, rate_multiplier: float, weights: np.ndarray):
        self.shared, self.layout = shared, shared.layout
        self.lane = shared.new_lane()
        self.n_tips = self.layout.n_tips
        self.weights = np.asarray(weights, dtype=np.float64)
        n = self.layout.n_nodes
        v, zero = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        # each node's slot-0 buffer, matrix and scale buffer in this lane (tips' buffers never flip); the
        # current ones start there, and flipping a slot maps x to 2 base + 1 - x (base <-> base + 1)
        self._buf0 = self.layout.buffers(self.lane, v, zero).tolist()
        self._mat0 = self.layout.matrices(self.lane, v, zero).tolist()
        self._scale0 = self.layout.scales(self.lane, v, zero).tolist()
        self._buf, self._mat, self._scale = self._buf0[:], self._mat0[:], self._scale0[:]
        self._cumulative = self.layout.cumulative(self.lane)
        self.model, self.mult = model, float(rate_multiplier)
        self.tree: Tree | None = None
        self.lnl = 0.0
        self._saved = None
        self._topo: _Topology | None = None
        self.coding_variable = model.spec.coding == "variable"

    # -- proposals ---------------------------------------------------------------------------
    def propose(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> float:
        """ln L for `tree` (new model / multiplier if given) now: stage, then flush the shared instance."""
        self.stage(tree, model, rate_multiplier)
        finish_flush(self.shared)
        return self.lnl

    def stage(self, tree: Tree, model=None, rate_multiplier: float | None = None) -> None:
        """Queue the work of a proposal in the inactive slots; `lnl` is valid after the next flush."""
        self._saved = (self._buf[:], self._mat[:], self._scale[:], self.tree, self.model, self.mult, self.lnl,
                       self._topo)
        full = self.tree is None or model is not None or rate_multiplier is not None
        if model is not None:
            self.model = model
        if rate_multiplier is not None:
            self.mult = float(rate_multiplier)
        if full:
            topo = self._topo if self._topo is not None and self._topo.key == tree.parent.tobytes() else _Topology(tree)
            nodes, depths = topo.full()
            mat_dirty = topo.edges()
        else:
            topo, mat_dirty, nodes, depths = self._dirty(self.tree, tree)
        self.shared.enqueue(self._job(tree, topo, mat_dirty, nodes, depths))
        self.tree, self._topo = tree, topo

    def accept(self) -> None:
        self._saved = None

    def reject(self) -> None:
        assert self._saved is not None, "reject() without a pending proposal"
        self._buf, self._mat, self._scale, self.tree, self.model, self.mult, self.lnl, self._topo = self._saved
        self._saved = None

    def finish(self, root_lnl: float) -> None:
        """Take the flushed root log likelihood (Mkv-corrected for coding=variable)."""
        lnl = root_lnl
        if self.coding_variable:
            lnl += model_correction(self.weights, self.tree, self.model, self.mult)
        self.lnl = float(lnl)

    # -- internals -----------------------------------------------------------------------------
    def _dirty(self, old: Tree, tree: Tree):
        """(topology of `tree`, matrix-dirty nodes, partial-dirty internal nodes child-first, their
        depths) of a proposal from `old` under the same model, as lists."""
        root = tree.root
        mat_dirty = [v for v in (old.brlen != tree.brlen).nonzero()[0].tolist() if v != root]
        moved = (old.parent != tree.parent).nonzero()[0].tolist()
        topo = self._topo
        if moved:
            topo = topo.moved_to(tree, moved)
        par = topo.parent
        seeds = {par[v] for v in mat_dirty}
        if moved:
            old_par = self._topo.parent
            seeds.update(par[v] for v in moved)
            seeds.update(old_par[v] for v in moved)
        return (topo, mat_dirty, *deepest_first(par, [v for v in seeds if v >= self.n_tips]))

    def _job(self, tree: Tree, topo: _Topology, mat_dirty: list, nodes: list, depths: list):
        m, mult = self.model, self.mult
        buf, mat, scale, kids = self._buf, self._mat, self._scale, topo.kids
        buf0, mat0, scale0 = self._buf0, self._mat0, self._scale0
        for v in mat_dirty:
            mat[v] = 2 * mat0[v] + 1 - mat[v]
        brlen = tree.brlen.tolist()
        for v in nodes:
            buf[v] = 2 * buf0[v] + 1 - buf[v]
            scale[v] = 2 * scale0[v] + 1 - scale[v]
        ops = []                                        # 7 ints per node, flat
        for v in nodes:
            c1, c2, _ = kids[v]
            ops += (buf[v], scale[v], NONE, buf[c1], mat[c1], buf[c2], mat[c2])
        top = max(depths) if depths else 0
        cum = self._cumulative
        root = topo.root
        third = kids[root][2]
        root_call = (buf[root], m.frequencies, m.category_weights, m.pinvar, cum, buf[third], mat[third])
        return LaneJob(self.lane, m.eigen, m.category_rates, [mat[v] for v in mat_dirty],
                       [brlen[v] * mult for v in mat_dirty], ops, [top - d for d in depths],
                       scale[self.n_tips:], cum, root_call)


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


def pipeline_groups() -> int:
    """In how many groups a generation's chains propose and launch when step_generation is given no
    `groups`: PIPELINE_GROUPS, 2 (the device computes one group's likelihoods while the host proposes
    the next; docs/performance.md)."""
    return PIPELINE_GROUPS


def core_for(chains):
    """The compiled core (mbgpu.core.stepper) stepping `chains`, built at their first generation; None
    when it cannot run them (the reason is kept on the first chain) and the interpreted step does."""
    first = chains[0]
    if first._core is not None:
        return first._core[0]
    if getattr(first, "core_refused", None) is None:
        first.core_refused = unsupported(chains) or ""
        if not first.core_refused:
            return CoreStepper(chains)
        _refuse_interpreted(first)
    return None


def _refuse_interpreted(chain) -> None:
    """The compound Poisson clock runs only in the compiled core (its tree moves carry the events there).

    Raises:
        NotImplementedYet: a cpp clock tree in chains the core cannot step.
    """
    relaxed = getattr(chain.trees[0], "relaxed", None)
    if relaxed is not None and relaxed.kind == "cpp":
        raise NotImplementedYet("mcmc with prset clockvarpr=cpp and %s is not supported yet" % chain.core_refused)


def step_generation(runs, ranks, opts, groups: int | None = None) -> None:
    """One generation of every chain: propose, evaluate, decide (each chain's draws in the usual order).

    The chains propose in `groups` groups; each group's likelihood work is launched as soon as it is
    queued, so the device computes one group while the host proposes the next. Then each group, in
    launch order, gets its log priors, its likelihoods and its decisions, so the host decides for one
    group while the device still computes the later ones. groups=1: one flush for all chains.
    A chain's draws come only from its own stream, so the order across chains changes no result.
    """
    from mbgpu.sampler.swaps import heat

    held = runs[0][0]._core                 # the compiled core, once built: no per-chain Python below
    if held is not None:
        core = held[0]
        core.step(core.heats_for(ranks, opts.temp), opts.tunefreq, opts.autotune, opts.power)
        return
    chains = [c for run in runs for c in run]
    heats = [heat(rank[pos], opts.temp) for run, rank in zip(runs, ranks) for pos in range(len(run))]
    core = core_for(chains)
    if core is not None:
        core.step(np.array(heats), opts.tunefreq, opts.autotune, opts.power)
        return
    k = max(1, min(groups or pipeline_groups(), len(chains)))
    bounds = [len(chains) * g // k for g in range(k + 1)]
    pending, tickets = [], []
    for g in range(k):
        part = chains[bounds[g]:bounds[g + 1]]
        pending += [c.begin_step() for c in part]
        tickets.append(launch_chains(part, str(g)))
    for g in range(k):
        span = range(bounds[g], bounds[g + 1])
        ready = [chains[i].prepare_step(pending[i]) for i in span]     # host work while the device runs
        collect_chains(tickets[g])
        for i, p in zip(span, ready):
            chains[i].end_step(p, heats[i], opts.tunefreq, opts.autotune, opts.power)


class PartFactory:
    """Builds each chain's per-pattern-set likelihood: lanes of shared instances, or per-chain ones."""

    def __init__(self, factory, n_tips: int, n_lanes: int, mode: str = "batched"):
        assert mode in SAMPLER_MODES, mode
        self.factory, self.n_tips, self.n_lanes = factory, n_tips, n_lanes
        self.mode = mode
        self.shared: dict[int, SharedInstance] = {}

    def new(self, k: int, tips, weights, model, fixed_mult: float):
        """The likelihood of pattern set k for one more chain."""
        if self.mode == "chain":
            from mbgpu.sampler.incremental import IncrementalPartition

            return IncrementalPartition(tips, weights, model, fixed_mult, self.factory, self.n_tips)
        shared = self.shared.get(k)
        if shared is None:
            shared = self.shared[k] = SharedInstance(tips, weights, model.n_categories, self.n_lanes, self.factory)
        part = LanePartition(shared, model, fixed_mult, weights)
        shared.lanes[part.lane] = part
        return part
