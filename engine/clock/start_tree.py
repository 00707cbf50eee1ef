"""A clock tree's start state from a `startvals tau=T v=T` tree, with MrBayes 3.2.7a's checks (model.c /
utils.c: IsClockSatisfied, IsCalibratedClockSatisfied, SetNodeDepths) and its error sentences.

The tree must be rooted and bifurcating; its branch lengths are substitution units. Undated tips must sit
at one depth (MrBayes' tolerance 0.001 on root-to-tip paths); dated tips (tip calibrations) keep their
depth. Calibrations bound the clock rate (depth / age): a fixed clock rate outside those bounds is MrBayes'
error, a free one outside them starts at the smallest rate they allow (measured with mb-double). One
measured quirk not copied: MrBayes rescales a start tree whose age differs from `treeagepr=fixed(x)` and
charges -1e6; here that is an error (docs/plans/clocks.md §0).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu import constraints
from mbgpu.clock.distributions import FIXED
from mbgpu.clock.rooted import children, depths_of, root_of, written_children
from mbgpu.errors import ModelError, NotImplementedYet
from mbgpu.tree import Tree

CLOCK_TOL = 0.001            # IsClockSatisfied's tolerance on root-to-tip paths (1e-3 refused, 9e-4 taken)
RATE_TOL = 0.0001            # AreDoublesEqual tolerance for min/max rates that cross by rounding
UNBOUNDED_AGE = 1e25         # an unbounded calibration's maximum in the rate bounds (mb-double: rate 1.8e-26)


@dataclass(frozen=True)
class ClockStart:
    """The arrays the clock priors read (mbgpu.clock.rooted) and the per-node masks: `cal_kind[v]` the
    calibration kind of a dated node (-1: undated), `cal_params[v]` its (p0, p1, p2), `locked[v]` a node
    of a hard constraint of `topologypr=constraints(...)`; `clock_rate` the start clock rate; `brlen` the
    start tree's branch lengths as written (MrBayes prints and sums these at Gen 0, not depth differences:
    they differ for a nearly ultrametric tree) and `written_kids` each node's children in the order the
    tree is written (MrBayes' left/right, the order its .t file prints; `kids` is sorted by node id)."""

    parent: np.ndarray
    kids: np.ndarray
    depth: np.ndarray
    n_tips: int
    cal_kind: np.ndarray
    cal_params: np.ndarray
    locked: np.ndarray
    clock_rate: float
    brlen: np.ndarray | None = None
    written_kids: np.ndarray | None = None

    @property
    def dated(self) -> np.ndarray:
        return self.cal_kind >= 0


def rooted_user_tree(settings, name: str) -> Tree:
    """The trees-block tree `name` as parsed (rooted as written), over the matrix taxa.

    Raises:
        ModelError: its root is not bifurcating (MrBayes: rootedness of source and destination differ).
    """
    from mbgpu.start_state import taxon_index

    rec = settings.trees[name]
    tree = Tree.from_newick(rec.newick, taxon_index(settings.matrix.taxa, rec.translate))
    n_kids = np.bincount(tree.parent[tree.parent >= 0], minlength=tree.n_nodes)
    if n_kids[tree.root] != 2:
        raise ModelError("startvals tree '%s': the given tree has unrooted structure (a clock tree must be rooted)"
                         % name, rec.where)
    if np.any(n_kids[tree.n_tips:] != 2):
        raise ModelError("startvals tree '%s': the given tree has unrooted structure (a clock tree must be "
                         "bifurcating)" % name, rec.where)
    return tree


def written_tip_ranks(settings, name: str) -> np.ndarray:
    """rank[t]: the position of tip t in the trees-block tree `name` as written."""
    from mbgpu.start_state import taxon_index
    from mbgpu.tree import tips_in_written_order

    rec = settings.trees[name]
    order = tips_in_written_order(rec.newick, taxon_index(settings.matrix.taxa, rec.translate))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank


def _mrca(parent: np.ndarray, taxa) -> int:
    """The most recent common ancestor of the 0-based tips `taxa`."""
    paths = []
    for t in sorted(taxa):
        v, path = int(t), []
        while v >= 0:
            path.append(v)
            v = int(parent[v])
        paths.append(path)
    common = set(paths[0]).intersection(*paths[1:])
    return next(v for v in paths[0] if v in common)


def _calibration_arrays(parent: np.ndarray, model) -> tuple[np.ndarray, np.ndarray]:
    """(cal_kind, cal_params) of every node: tip calibrations at their tips, node calibrations at the
    MRCA of their taxa (the constraint's clade; the root for all taxa)."""
    kind = np.full(parent.shape[0], -1, dtype=np.int64)
    params = np.zeros((parent.shape[0], 3))
    for cal in model.node_calibrations + model.tip_calibrations:
        v = _mrca(parent, cal.taxa)
        kind[v] = cal.dist.kind
        params[v, :len(cal.dist.params)] = cal.dist.params
    return kind, params


def _locked(settings, parent: np.ndarray, divisions) -> np.ndarray:
    """Nodes of the hard constraints the tree's topology prior enforces (ColorClusters' locked nodes)."""
    out = np.zeros(parent.shape[0], dtype=bool)
    pr = settings.topology_prior([d - 1 for d in divisions])
    if pr is not None and pr.kind == "Constraints":
        for c in constraints.named(settings, pr.args):
            if c.kind == "hard":
                out[_mrca(parent, c.taxa)] = True
    return out


def _paths(tree: Tree) -> np.ndarray:
    """Each node's distance from the root (sum of branch lengths above it)."""
    out = np.zeros(tree.n_nodes)
    for v in tree.postorder()[::-1]:
        if tree.parent[v] >= 0:
            out[v] = out[tree.parent[v]] + tree.brlen[v]
    return out


def check_ultrametric(tree: Tree, dated: np.ndarray, names) -> None:
    """IsClockSatisfied: every undated tip at one depth, within CLOCK_TOL of root-to-tip paths (dated tips
    are where their branches put them).

    Raises:
        ModelError: MrBayes' sentence for the first tip (in taxon order) off the depth most undated tips share.
    """
    path = _paths(tree)[:tree.n_tips]
    undated = [t for t in range(tree.n_tips) if not dated[t]]
    if not undated:
        return
    shared = [sum(abs(path[t] - path[u]) <= CLOCK_TOL for u in undated) for t in undated]
    common = path[undated[int(np.argmax(shared))]]
    for t in undated:
        if abs(path[t] - common) > CLOCK_TOL:
            raise ModelError("Node (%s) is not at the same depth as some other tip taking colibration into "
                             "account. Non-calibrated tips are not at the same level in the start tree" % names[t])


def age_bounds(parent: np.ndarray, n_tips: int, model) -> tuple[np.ndarray, np.ndarray]:
    """Per-node (min, max) age IsCalibratedClockSatisfied reads: a calibration's range (an unbounded
    maximum as UNBOUNDED_AGE), 0 for undated tips, -1 elsewhere (unknown)."""
    lo = np.full(parent.shape[0], -1.0)
    hi = np.full(parent.shape[0], -1.0)
    lo[:n_tips] = hi[:n_tips] = 0.0
    for cal in model.node_calibrations + model.tip_calibrations:
        v = _mrca(parent, cal.taxa)
        lo[v], hi[v] = cal.dist.min, min(cal.dist.max, UNBOUNDED_AGE)
    return lo, hi


def _pair_bounds(r, s, depth, lo, hi, cal_kind) -> tuple[float, float]:
    """One pair's (smallest, largest) rate, r the deeper node (IsCalibratedClockSatisfied's inner loop):
    the deeper node's oldest age over the other's youngest bounds the rate from below, its youngest over
    the other's oldest from above. A pair that bounds nothing is skipped as MrBayes skips it.

    Raises:
        ModelError: the pair cannot be ordered (MrBayes: "Branch lengths do not satisfy the calibration(s)").
    """
    gap = depth[r] - depth[s]
    if lo[r] <= hi[s]:
        loose = cal_kind[r] not in (-1, FIXED) or cal_kind[s] not in (-1, FIXED)
        if gap <= RATE_TOL * 0.1 or loose:
            return 0.0, np.inf
        raise ModelError("Branch lengths do not satisfy the calibration(s)")
    top = gap / (lo[r] - hi[s])
    if hi[r] <= lo[s]:
        if gap <= RATE_TOL * 0.1:
            return 0.0, top
        raise ModelError("Branch lengths do not satisfy the calibration(s)")
    return gap / (hi[r] - lo[s]), top


def rate_bounds(depth, lo, hi, cal_kind) -> tuple[float, float]:
    """IsCalibratedClockSatisfied: the smallest and largest clock rate (depth / age) under which every
    dated node's age lies in its calibration, from every pair of dated nodes and undated tips.

    Raises:
        ModelError: no rate satisfies them (MrBayes: "Branch lengths do not satisfy the calibration(s)").
    """
    known = [v for v in range(depth.shape[0]) if lo[v] >= 0.0]
    min_rate, max_rate = 0.0, np.inf
    for i, p in enumerate(known):
        for q in known[i + 1:]:
            if depth[p] == depth[q]:
                if lo[p] > hi[q] + RATE_TOL or hi[p] < lo[q] - RATE_TOL:
                    raise ModelError("Branch lengths do not satisfy the calibration(s)")
                continue
            r, s = (p, q) if depth[p] > depth[q] else (q, p)
            small, large = _pair_bounds(r, s, depth, lo, hi, cal_kind)
            min_rate, max_rate = max(min_rate, small), min(max_rate, large)
    if min_rate > max_rate and min_rate - max_rate <= RATE_TOL:
        max_rate = min_rate
    if min_rate > max_rate:
        raise ModelError("Branch lengths do not satisfy the calibration(s)")
    return min_rate, max_rate


def start_clock_rate(model, bounds: tuple[float, float]) -> float:
    """The clock rate MrBayes starts from: its start value when the calibrations allow it; a free rate
    outside them starts at the smallest rate they allow (mb-double: 1.0 -> 0.6 and 0.1 -> 0.6 for apes
    uniform(0.2,0.3) at depth 0.18).

    Raises:
        ModelError: a fixed clock rate the calibrations exclude (MrBayes' sentence).
        NotImplementedYet: only a maximum rate binds (not measured in MrBayes).
    """
    rate = model.clock_rate_start
    if bounds[0] - RATE_TOL <= rate <= bounds[1] + RATE_TOL:
        return rate
    if model.clock_rate.kind == FIXED:
        raise ModelError("Fixed branch lengths do not satisfy fixed clockrate %g (the calibrations need a rate in "
                         "[%g, %g])" % (rate, bounds[0], bounds[1]))
    if bounds[0] <= 0.0:
        raise NotImplementedYet("a start tree whose calibrations bound the clock rate only from above (below the "
                                "start value %g) is not supported yet" % rate)
    return bounds[0]


def clock_start(settings, model, name: str) -> ClockStart:
    """The start state of the clock tree of `model` from the trees-block tree `name` (MrBayes' startvals
    tau/V of a clock tree), with MrBayes' checks.

    Raises:
        ModelError: unrooted or multifurcating tree, undated tips at different depths, calibrations no
            clock rate satisfies or that exclude a fixed rate, a tree age other than a fixed treeagepr.
        NotImplementedYet: calibrations that bound a free clock rate only from above, below its start value.
    """
    tree = rooted_user_tree(settings, name)
    where = settings.trees[name].where
    cal_kind, cal_params = _calibration_arrays(tree.parent, model)
    try:
        check_ultrametric(tree, cal_kind >= 0, settings.matrix.taxa)
        depth = depths_of(tree, np.flatnonzero(cal_kind[:tree.n_tips] >= 0))
        rate = start_clock_rate(model, rate_bounds(depth, *age_bounds(tree.parent, tree.n_tips, model), cal_kind))
        _check_fixed_age(model, tree.parent, depth, rate, cal_kind)
    except (ModelError, NotImplementedYet) as err:
        raise type(err)("startvals tree '%s': %s" % (name, err.message), where) from None
    return ClockStart(tree.parent, children(tree.parent), depth, tree.n_tips, cal_kind, cal_params,
                      _locked(settings, tree.parent, model.divisions), rate, tree.brlen.copy(),
                      written_children(tree.parent, tree.n_tips, written_tip_ranks(settings, name)))


def _check_fixed_age(model, parent, depth, rate, cal_kind) -> None:
    """treeagepr=fixed(x) (an undated root of a uniform/birth-death/FBD tree): the tree must be x old.
    MrBayes rescales the tree and charges -1e6 instead (clocks.md §0); an error here."""
    if model.tree_prior == "coalescence" or model.tree_age.kind != FIXED:
        return
    top = root_of(parent)
    if cal_kind[top] >= 0:
        return
    age = depth[top] / rate
    want = model.tree_age.params[0]
    if abs((age - want) / want) > 1e-5:
        raise ModelError("the tree is %g old but treeagepr=fixed(%g) fixes the tree age (MrBayes rescales the "
                         "start tree and charges a prior of -1e6: give a start tree of that age)" % (age, want))
