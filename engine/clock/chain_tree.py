"""A chain's clock tree: the rooted state the clock moves and priors read (a `ClockStart`: parent, kids,
node depths in substitution units, calibration arrays, locked nodes, clock rate) with the tree-prior
parameters, and, as a `mbgpu.tree.Tree`, its unrooted view, which the likelihood and the split counts read.

The view joins the root's two branches into one (the likelihood of a reversible model does not depend on
where the root sits on that branch, and the tree length stays), so the sampler's likelihood paths, which
keep a trifurcating root, serve clock trees unchanged. A ClockTree is never changed after it is built: a
move builds a new one (`moved`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from mbgpu.clock.log_prior import ln_prior
from mbgpu.clock.relaxed_state import RelaxedState, start_relaxed
from mbgpu.clock.rooted import branch_lengths, keep_written_order, moved_lengths, root_of, unrooted_view_into
from mbgpu.clock.start_tree import ClockStart
from mbgpu.tree import Tree


@dataclass(frozen=True)
class ClockFrame:
    """What no move changes: the tree's ClockModel and each node's calibration range in ages (`cal_lo`,
    `cal_hi`; NaN where the node is not dated), by node id (dated nodes keep their ids under the moves)."""

    model: object
    cal_lo: np.ndarray
    cal_hi: np.ndarray

    def depth_bounds(self, state: ClockStart) -> tuple[np.ndarray, np.ndarray]:
        """(min_depth, max_depth) the moves keep each node in at the state's clock rate (mbgpu.clock.tree_moves
        .depth_bounds): undated tips at 0, dated nodes in their calibration, an undated root in treeagepr's
        range (not under the coalescent), other nodes free."""
        n = state.parent.shape[0]
        rate = state.clock_rate
        lo, hi = np.zeros(n), np.full(n, math.inf)
        hi[:state.n_tips] = 0.0
        dated = ~np.isnan(self.cal_lo)
        lo[dated], hi[dated] = self.cal_lo[dated] * rate, self.cal_hi[dated] * rate
        root = root_of(state.parent)
        if not dated[root] and self.model.tree_prior != "coalescence":
            lo[root], hi[root] = self.model.tree_age.min * rate, self.model.tree_age.max * rate
        return lo, hi


def frame_of(model, state: ClockStart) -> ClockFrame:
    """The frame of a start state: the calibrations' (min, max) ages at the nodes that carry them."""
    from mbgpu.clock.start_tree import _mrca

    n = state.parent.shape[0]
    lo, hi = np.full(n, np.nan), np.full(n, np.nan)
    for cal in model.node_calibrations + model.tip_calibrations:
        v = _mrca(state.parent, cal.taxa)
        lo[v], hi[v] = cal.dist.min, cal.dist.max
    return ClockFrame(model, lo, hi)


def unrooted_view(parent: np.ndarray, lengths: np.ndarray, n_tips: int) -> tuple[np.ndarray, np.ndarray]:
    """(parent, brlen) of the rooted tree without its root (mbgpu.clock.rooted.unrooted_view_into: 2 n - 2
    nodes, tips unchanged)."""
    t_parent, t_brlen = np.empty(parent.shape[0] - 1, dtype=np.int64), np.empty(parent.shape[0] - 1)
    unrooted_view_into(parent, lengths, t_parent, t_brlen)
    return t_parent, t_brlen


class ClockTree(Tree):
    """A clock tree in a chain's state: `state` (rooted arrays and clock rate), `params` (the tree-prior
    parameters: label -> float64 array, as ClockModel.starts() names them), `frame`, `relaxed` (igr / tk02
    rates, mbgpu.clock.relaxed_state; MrBayes' start state when not given, None for a strict clock); as a
    Tree, its unrooted view with the effective branch lengths (`eff`: the lengths themselves for a strict
    clock)."""

    def __init__(self, frame: ClockFrame, state: ClockStart, params: dict, relaxed: RelaxedState | None = None):
        if state.brlen is None:
            state = replace(state, brlen=branch_lengths(state.parent, state.depth))
        if relaxed is None:
            relaxed = start_relaxed(frame.model, state.parent.shape[0])
        self.eff = state.brlen if relaxed is None else relaxed.effective_lengths(state.parent, state.brlen, state.kids)
        parent, brlen = unrooted_view(state.parent, self.eff, state.n_tips)
        super().__init__(state.n_tips, parent, brlen)
        self.frame, self.state, self.params, self.relaxed = frame, state, params, relaxed
        self._ln_prior = None

    def copy(self) -> "ClockTree":
        """An independent copy (the frame is shared)."""
        s = self.state
        return ClockTree(self.frame, replace(s, parent=s.parent.copy(), kids=s.kids.copy(), depth=s.depth.copy(),
                                             brlen=s.brlen.copy()),
                         {k: v.copy() for k, v in self.params.items()},
                         None if self.relaxed is None else self.relaxed.copy())

    def moved(self, parent: np.ndarray, kids: np.ndarray, depth: np.ndarray, clock_rate: float | None = None,
              params: dict | None = None, relaxed: RelaxedState | None = None) -> "ClockTree":
        """A new ClockTree with the given rooted arrays (a move's result) and, where given, clock rate,
        parameters and relaxed-clock rates (else this tree's; rates stay with node ids). As in MrBayes, only the branches whose ends moved get new lengths
        (depth differences): the others keep theirs, a start tree's as written; children keep their order
        where a node's children stay the same (MrBayes' left/right, the order the .t file prints)."""
        old = self.state
        lengths = old.brlen.copy()
        written = old.written_kids
        if moved_lengths(parent, depth, old.parent, old.depth, lengths) and written is not None:
            written = written.copy()
            keep_written_order(written, kids)
        state = replace(old, parent=parent, kids=kids, depth=depth, brlen=lengths, written_kids=written,
                        clock_rate=old.clock_rate if clock_rate is None else clock_rate)
        return ClockTree(self.frame, state, self.params if params is None else params,
                         self.relaxed if relaxed is None else relaxed)

    @property
    def clock_rate(self) -> float:
        return self.state.clock_rate

    @property
    def height(self) -> float:
        """TH: the root's depth (substitution units)."""
        return float(self.state.depth[root_of(self.state.parent)])

    def values(self) -> dict:
        """The clock parameters as ln_prior reads them (scalars as floats; clockrate included)."""
        out = {k: (float(v[0]) if v.shape[0] == 1 else v) for k, v in self.params.items()}
        out["clockrate"] = self.state.clock_rate
        if self.relaxed is not None:
            out["rates"] = self.relaxed.rates
        if self.relaxed is not None and self.relaxed.kind == "cpp":
            out["cpp_events"], out["cpp_multipliers"] = self.relaxed.n_events, self.relaxed.multipliers
        return out

    def ln_prior(self) -> float:
        """MrBayes' clock terms of LnPr for this tree (mbgpu.clock.log_prior.ln_prior), computed once."""
        if self._ln_prior is None:
            self._ln_prior = float(ln_prior(self.frame.model, self.state, self.values()))
        return self._ln_prior


def start_params(model, drawn: dict | None = None) -> dict:
    """The tree-prior parameters' start values as arrays (ClockModel.starts() less the clock rate;
    `drawn` supplies those MrBayes draws at random); relative_fossilization has one value per
    fossil-sampling interval (s+1 for s shift times), each at the start value, as in MrBayes."""
    out = {}
    for k, v in {**model.starts(), **(drawn or {})}.items():
        if k == "clockrate":
            continue
        if v is None:
            raise ValueError("no start value for %s" % k)
        out[k] = np.atleast_1d(np.asarray(v, dtype=np.float64)).copy()
    if "relative_fossilization" in out and out["relative_fossilization"].shape[0] == 1:
        out["relative_fossilization"] = np.repeat(out["relative_fossilization"], len(model.shift_times) + 1)
    return out
