"""Clock trees in the compiled core: each chain's rooted state as rows (`ClockArgs`, current and proposed),
beside the unrooted view the core's tree rows (mbgpu.core.trees.ChainTrees) hold for the likelihood.

Per chain c (N = 2 n_tips - 1 nodes, node ids of the chain's ClockTree): `parent`, `kids` (sorted),
`depth`, `brlen` (MrBayes' lengths as they stand), `written` (the .t file's child order), `rate` (clock
rate), `params` (tree-prior parameters, mbgpu.clock.prior_table's packing), `rates` and `eff` (relaxed
rates and effective lengths), `n_events`, `positions`, `mults` (the CPP events; rows of a capacity that
`grow_events` doubles between generations), each with a `_p` copy; and what no move changes: calibrations (`cal_kind`,
`cal_params`, ages `cal_min`/`cal_max`, `dated`), `locked`, the model as numbers. `ClockRows` builds them
from the chains' ClockTrees and gives each chain's back (`export`).
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import replace

import numpy as np

from mbgpu.clock.chain_tree import ClockTree
from mbgpu.clock.prior_table import ln_clock_prior, pack_params, prior_table, shift_array, unpack_params
from mbgpu.clock.relaxed_lengths import CPP, IGR, TK02
from mbgpu.clock.relaxed_state import RelaxedState
from mbgpu.core.clock_moves import STRICT, events_near_full
from mbgpu.core.pars_spr import prepare_pars_data

ROWS = ("parent", "kids", "depth", "brlen", "written", "rate", "params", "rates", "eff", "n_events", "positions",
        "mults")
ClockArgs = namedtuple("ClockArgs", ROWS + tuple(k + "_p" for k in ROWS) + (
    "cal_kind", "cal_params", "cal_min", "cal_max", "dated", "locked",
    "live", "picked", "lo", "hi",
    "model", "relaxed", "n_fossil", "prior_kinds", "prior_args", "shift_times"))

_RELAXED = {None: STRICT, "igr": IGR, "tk02": TK02, "cpp": CPP}


def _rows(trees: list[ClockTree]) -> dict:
    """The state rows of the chains' trees (current; the proposal rows are copies)."""
    states = [t.state for t in trees]
    model = trees[0].frame.model
    return {
        "parent": np.stack([s.parent for s in states]).astype(np.int64),
        "kids": np.stack([s.kids for s in states]).astype(np.int64),
        "depth": np.stack([s.depth for s in states]).astype(np.float64),
        "brlen": np.stack([s.brlen for s in states]).astype(np.float64),
        "written": np.stack([s.kids if s.written_kids is None else s.written_kids for s in states]).astype(np.int64),
        "rate": np.array([s.clock_rate for s in states], dtype=np.float64),
        "params": np.stack([pack_params(model, t.params) for t in trees]),
        "rates": np.stack([np.ones(s.parent.shape[0]) if t.relaxed is None else t.relaxed.rates
                           for s, t in zip(states, trees)]).astype(np.float64),
        "eff": np.stack([t.eff for t in trees]).astype(np.float64), **_events(trees)}


def _events(trees: list[ClockTree]) -> dict:
    """The CPP event rows (one empty slot per node without a compound Poisson clock), at one capacity."""
    n = trees[0].state.parent.shape[0]
    if trees[0].relaxed is None or trees[0].relaxed.kind != "cpp":
        return {"n_events": np.zeros((len(trees), n), dtype=np.int64), "positions": np.zeros((len(trees), n, 1)),
                "mults": np.ones((len(trees), n, 1))}
    cap = max(t.relaxed.positions.shape[1] for t in trees)
    pos, mults = np.zeros((len(trees), n, cap)), np.ones((len(trees), n, cap))
    for c, t in enumerate(trees):
        k = t.relaxed.positions.shape[1]
        pos[c, :, :k], mults[c, :, :k] = t.relaxed.positions, t.relaxed.multipliers
    return {"n_events": np.stack([t.relaxed.n_events for t in trees]).astype(np.int64), "positions": pos,
            "mults": mults}


def _statics(trees: list[ClockTree]) -> dict:
    """What the moves never change, per chain: calibrations by node id, locked nodes."""
    lo = np.stack([t.frame.cal_lo for t in trees])
    hi = np.stack([t.frame.cal_hi for t in trees])
    return {"cal_kind": np.stack([t.state.cal_kind for t in trees]).astype(np.int64),
            "cal_params": np.stack([t.state.cal_params for t in trees]).astype(np.float64),
            "cal_min": np.where(np.isnan(lo), 0.0, lo), "cal_max": np.where(np.isnan(hi), math.inf, hi),
            "dated": ~np.isnan(lo), "locked": np.stack([t.state.locked for t in trees]).astype(np.bool_)}


def _model_numbers(model) -> np.ndarray:
    """(root bounded by treeagepr, its kind, min, max): the undated root's depth range of the moves."""
    age = model.tree_age
    return np.array([0.0 if model.tree_prior == "coalescence" else 1.0, float(age.kind), age.min, age.max])


class ClockRows:
    """The clock state of every chain (one clock tree each) as ClockArgs (`args`)."""

    def __init__(self, trees: list[ClockTree], ctx):
        self.frames = [t.frame for t in trees]
        self.unwritten = [t.state.written_kids is None for t in trees]
        self.model = model = trees[0].frame.model
        cur = _rows(trees)
        prop = {k + "_p": v.copy() for k, v in cur.items()}
        kinds, args = prior_table(model)
        n_chains, n = cur["parent"].shape
        # ParsSPRClock's data (without rate multipliers, as MrBayes' move): apart from ClockArgs, so that
        # these stay a flat tuple that numba's parallel loops take (mbgpu.core.handoff)
        self.pars = prepare_pars_data(ctx.pattern_masks, ctx.n_states, None, trees[0].n_tips)
        self.args = ClockArgs(**cur, **prop, **_statics(trees), live=np.zeros(n_chains, dtype=np.int8),
                              picked=np.full(n_chains, -1, dtype=np.int64),
                              lo=np.zeros((n_chains, n)), hi=np.zeros((n_chains, n)), model=_model_numbers(model),
                              relaxed=_RELAXED[model.clock_var if model.clock_var in _RELAXED else None],
                              n_fossil=len(model.shift_times) + 1, prior_kinds=kinds, prior_args=args,
                              shift_times=shift_array(model))

    def ln_priors(self) -> np.ndarray:
        """Every chain's clock log prior from its rows (the compiled function its proposals are scored by,
        so that a run continued from a checkpoint scores as the run it continues)."""
        a = self.args
        return np.array([ln_clock_prior(a.prior_kinds, a.prior_args, a.shift_times, a.parent[c], a.depth[c],
                                        (a.parent.shape[1] + 1) // 2, a.rate[c], a.params[c], a.rates[c],
                                        a.n_events[c], a.mults[c], a.cal_kind[c], a.cal_params[c], a.locked[c])
                         for c in range(a.rate.shape[0])])

    def grow_events(self) -> bool:
        """Double the CPP rows' capacity when a branch holds half of it (so that no add and no ExtSPRClock
        merge of two branches meets a full row); True when it grew (the caller passes the new `args`)."""
        a = self.args
        cap = a.positions.shape[2]
        if not events_near_full(a):
            return False
        wider = {}
        for k in ("positions", "mults", "positions_p", "mults_p"):
            old = getattr(a, k)
            shape = old.shape[:2] + (2 * cap,)
            new = np.zeros(shape) if k.startswith("positions") else np.ones(shape)
            new[:, :, :cap] = old
            wider[k] = new
        self.args = a._replace(**wider)
        return True

    def export(self, c: int, like: ClockTree) -> ClockTree:
        """Chain c's ClockTree from its rows (`like`: a tree of the chain, for the fields no move changes)."""
        a = self.args
        state = replace(like.state, parent=a.parent[c].copy(), kids=a.kids[c].copy(), depth=a.depth[c].copy(),
                        brlen=a.brlen[c].copy(), clock_rate=float(a.rate[c]),
                        written_kids=None if self.unwritten[c] else a.written[c].copy())
        relaxed = None if a.relaxed == STRICT else RelaxedState(self.model.clock_var, a.rates[c].copy())
        if a.relaxed == CPP:
            relaxed = RelaxedState("cpp", a.rates[c].copy(), a.n_events[c].copy(), a.positions[c].copy(),
                                   a.mults[c].copy())
        return ClockTree(self.frames[c], state, unpack_params(self.model, a.params[c]), relaxed)


def empty_args(n_chains: int) -> ClockArgs:
    """ClockArgs of a run without clock trees (nothing in them is read), of the types of a clock run's, so
    the compiled step is one function for both."""
    def ints(*shape):
        return np.zeros((n_chains,) + shape, dtype=np.int64)

    def floats(*shape):
        return np.zeros((n_chains,) + shape)

    cur = dict(parent=ints(0), kids=ints(0, 2), depth=floats(0), brlen=floats(0), written=ints(0, 2), rate=floats(),
               params=floats(0), rates=floats(0), eff=floats(0), n_events=ints(0), positions=floats(0, 1),
               mults=floats(0, 1))
    none = np.zeros((n_chains, 0), dtype=np.bool_)
    return ClockArgs(**cur, **{k + "_p": v.copy() for k, v in cur.items()}, cal_kind=ints(0),
                     cal_params=floats(0, 3), cal_min=floats(0), cal_max=floats(0), dated=none, locked=none.copy(),
                     live=np.zeros(n_chains, dtype=np.int8), picked=np.full(n_chains, -1, dtype=np.int64),
                     lo=floats(0), hi=floats(0), model=np.zeros(4), relaxed=STRICT, n_fossil=1,
                     prior_kinds=np.zeros(0, dtype=np.int64), prior_args=np.zeros(0), shift_times=np.zeros(0))
