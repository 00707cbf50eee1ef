"""A chain's clock tree in a checkpoint (mbgpu.clock.chain_tree.ClockTree), and its exact restoration.

Stored (keys under the chain's group, prefix `clock/`): the rooted arrays the moves change (parent, kids,
depth), the branch lengths as they stand (MrBayes keeps a start tree's written lengths on branches no move
has touched, so they are not depth differences), each node's written child order (the .t file's
left/right), the clock rate, the tree-prior parameters and a relaxed clock's rates (`clock/rates`: igr per
branch, tk02 per node, by node id) and CPP events (`clock/cpp_events`, `clock/cpp_positions`,
`clock/cpp_multipliers`: per node its count, then rows of the state's capacity). Not stored: what follows from the settings. The
frame (ClockModel, calibration ranges by node) is rebuilt from the restored tree as `frame_of` builds it at
the start; the per-node calibrations and hard-constraint locks are carried over from the freshly built
chain's start tree by clade (the tips below each such node), so a continuation with another start tree
(starttree, startvals and nperts may change) restores the same nodes.
"""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.clock.chain_tree import ClockTree, frame_of
from mbgpu.clock.relaxed_state import RelaxedState

KEYS = ("parent", "kids", "depth", "brlen", "written_kids", "rate", "param_names", "param_values", "param_sizes")
PREFIX = "clock/"


def is_clock(trees: list) -> bool:
    """True when the chain's trees are clock trees (one ClockTree: the sampler's only clock layout)."""
    clock = [isinstance(t, ClockTree) for t in trees]
    assert all(clock) or not any(clock), "a chain mixes clock and unconstrained trees"
    assert not any(clock) or len(trees) == 1, "a chain holds one clock tree"
    return bool(clock) and clock[0]


def capture_clock(tree: ClockTree) -> dict:
    """The clock tree's state, keys relative to the chain's group."""
    s = tree.state
    written = np.zeros((0, 2), dtype=np.int64) if s.written_kids is None else s.written_kids
    names = list(tree.params)
    out = {"parent": s.parent, "kids": s.kids, "depth": s.depth, "brlen": s.brlen, "written_kids": written,
           "rate": np.array([s.clock_rate], dtype=np.float64), "param_names": json.dumps(names),
           "param_values": np.concatenate([np.ravel(tree.params[k]) for k in names]) if names else np.zeros(0),
           "param_sizes": np.array([np.size(tree.params[k]) for k in names], dtype=np.int64)}
    if tree.relaxed is not None:
        out["rates"] = tree.relaxed.rates
    if tree.relaxed is not None and tree.relaxed.kind == "cpp":
        out.update(cpp_events=tree.relaxed.n_events, cpp_positions=tree.relaxed.positions,
                   cpp_multipliers=tree.relaxed.multipliers)
    return {PREFIX + k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in out.items()}


def has_clock(st: dict) -> bool:
    return PREFIX + "parent" in st


def restore_clock(fresh: ClockTree, st: dict, where: str) -> ClockTree:
    """The checkpointed clock tree, with the fresh chain's model and per-node static data (see module doc).

    Raises:
        CheckpointMismatch: missing clock datasets, other sizes or parameters, or a tree whose clades do not
            hold the fresh tree's calibrated or locked nodes (another model).
    """
    missing = [k for k in KEYS if PREFIX + k not in st]
    if missing:
        raise CheckpointMismatch("%s holds no clock tree state ('%s%s' is missing): it was written for another "
                                 "model" % (where, PREFIX, missing[0]))
    c = {k: st[PREFIX + k] for k in KEYS}
    old = fresh.state
    n = old.parent.shape[0]
    if c["parent"].shape != (n,) or c["kids"].shape != (n, 2) or c["depth"].shape != (n,) or c["brlen"].shape != (n,):
        raise CheckpointMismatch("%s was written for another model: its clock tree has %d nodes, not %d"
                                 % (where, c["parent"].shape[0], n))
    names = json.loads(c["param_names"])
    if names != list(fresh.params) or c["param_sizes"].tolist() != [np.size(v) for v in fresh.params.values()]:
        raise CheckpointMismatch("%s was written for another model: its tree-prior parameters are %s, this "
                                 "model's are %s" % (where, ", ".join(names) or "none",
                                                     ", ".join(fresh.params) or "none"))
    parent = c["parent"].astype(np.int64)
    cal_kind, cal_params, locked = carried_by_clade(old, parent, where)
    written = c["written_kids"].astype(np.int64) if c["written_kids"].size else None
    state = replace(old, parent=parent, kids=c["kids"].astype(np.int64), depth=c["depth"].astype(np.float64),
                    brlen=c["brlen"].astype(np.float64), written_kids=written, clock_rate=float(c["rate"][0]),
                    cal_kind=cal_kind, cal_params=cal_params, locked=locked)
    offsets = np.cumsum([0] + c["param_sizes"].tolist())
    params = {k: np.array(c["param_values"][a:b], dtype=np.float64)
              for k, a, b in zip(names, offsets[:-1], offsets[1:])}
    return ClockTree(frame_of(fresh.frame.model, state), state, params, _relaxed(fresh, st, n, where))


def _relaxed(fresh: ClockTree, st: dict, n: int, where: str):
    """The checkpointed relaxed-clock rates (None for a strict clock).

    Raises:
        CheckpointMismatch: the checkpoint and the model differ in having a relaxed clock, or in its size.
    """
    rates = st.get(PREFIX + "rates")
    if (rates is None) != (fresh.relaxed is None):
        raise CheckpointMismatch("%s was written for another model: %s relaxed clock" % (
            where, "it has no" if rates is None else "it has a"))
    if rates is None:
        return None
    if np.shape(rates) != (n,):
        raise CheckpointMismatch("%s was written for another model: its relaxed clock has %d rates, not %d"
                                 % (where, np.shape(rates)[0], n))
    rates = np.array(rates, dtype=np.float64)
    if fresh.relaxed.kind != "cpp":
        return RelaxedState(fresh.relaxed.kind, rates)
    events = [st.get(PREFIX + k) for k in ("cpp_events", "cpp_positions", "cpp_multipliers")]
    if any(e is None for e in events) or np.shape(events[0]) != (n,) or np.ndim(events[1]) != 2 \
            or np.shape(events[1]) != np.shape(events[2]) or np.shape(events[1])[0] != n:
        raise CheckpointMismatch("%s was written for another model: it holds no compound Poisson clock events of "
                                 "%d nodes" % (where, n))
    return RelaxedState("cpp", rates, np.array(events[0], dtype=np.int64), np.array(events[1], dtype=np.float64),
                        np.array(events[2], dtype=np.float64))


def tips_below(parent: np.ndarray, n_tips: int) -> list[frozenset]:
    """Each node's tip set (a tip's is itself)."""
    below: list[set] = [set() for _ in range(parent.shape[0])]
    for t in range(n_tips):
        v = t
        while v >= 0:
            below[v].add(t)
            v = int(parent[v])
    return [frozenset(s) for s in below]


def carried_by_clade(old, parent: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cal_kind, cal_params, locked) of the tree `parent`: each dated or locked node of the start state
    `old` moved to the node of `parent` with the same tip set."""
    before, after = tips_below(old.parent, old.n_tips), tips_below(parent, old.n_tips)
    node_of = {clade: v for v, clade in enumerate(after)}
    kind, params, locked = np.full_like(old.cal_kind, -1), np.zeros_like(old.cal_params), np.zeros_like(old.locked)
    for v in np.flatnonzero((old.cal_kind >= 0) | old.locked):
        w = node_of.get(before[v])
        if w is None:
            raise CheckpointMismatch("%s was written for another model: its clock tree lacks the clade of a "
                                     "calibrated or constrained node (taxa %s)"
                                     % (where, ",".join(str(t + 1) for t in sorted(before[v]))))
        kind[w], params[w], locked[w] = old.cal_kind[v], old.cal_params[v], old.locked[v]
    return kind, params, locked
