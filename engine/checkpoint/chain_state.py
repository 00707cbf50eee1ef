"""One chain's state as a flat dict of arrays and strings, and its exact restoration.

Stored: the tree (parent array, branch lengths; a clock tree's rooted state too:
mbgpu.checkpoint.clock_state), parameter values, lnL/lnPr/best lnL, each partition's
lnL, the random stream's full bit-generator state (and the compiled core's xoshiro state once the core
has stepped the chain), and every move's tuning and counters. Likelihood
caches are not stored: `restore_chain` rebuilds them from the tree and values and checks that the
recomputed lnL equals the stored one; the stored numbers are the ones that continue, so the output
of a continued run is byte-identical to an uninterrupted one.
"""
from __future__ import annotations

import json
import math

import numpy as np

from mbgpu.checkpoint.clock_state import capture_clock, has_clock, is_clock, restore_clock
from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.sampler.model_state import rate_multiplier
from mbgpu.tree import Tree

COUNT_KEYS = ("tried", "accepted", "batch_tried", "batch_accepted", "batches")
LNL_RTOL = 1e-9


def chain_key(run: int, chain: int) -> str:
    """The group of chain (run, chain), 0-based: 'chains/run1_chain2' is run 2, chain 3."""
    return "chains/run%d_chain%d" % (run, chain)


def rng_json(rng: np.random.Generator) -> str:
    """The full bit-generator state (PCG64: 128-bit state and increment, buffered uint32) as JSON."""
    return json.dumps(rng.bit_generator.state, sort_keys=True)


def set_rng(rng: np.random.Generator, text: str) -> None:
    rng.bit_generator.state = json.loads(text)


def move_tuning(move) -> dict:
    """A move's tuning values and inner tuning-batch count (tree moves keep a dict and `batches`)."""
    inner = getattr(move, "move", None)
    if inner is not None:
        return {"tuning": dict(inner.tuning), "batches": int(inner.batches)}
    return {"tuning": move.tuning}


def set_move_tuning(move, saved: dict) -> None:
    inner = getattr(move, "move", None)
    if inner is not None:
        inner.tuning = {k: float(v) for k, v in saved["tuning"].items()}
        inner.batches = int(saved["batches"])
    else:
        move.tuning = float(saved["tuning"])


def _stacked(rows: list) -> np.ndarray:
    """One tree's array as it is; several trees' (`unlink topology`) as rows of one array."""
    return rows[0].copy() if len(rows) == 1 else np.stack(rows)


def capture_chain(chain) -> dict:
    """The chain's state: keys relative to its group (see chain_key)."""
    moves = chain.moves
    last = [m.counts.get("last_rate") for m in moves]
    clock = capture_clock(chain.trees[0]) if is_clock(chain.trees) else {}
    return {**clock,
        "parent": _stacked([t.parent for t in chain.trees]), "brlen": _stacked([t.brlen for t in chain.trees]),
        "values": np.concatenate([np.ravel(v) for v in chain.values]) if chain.values else np.zeros(0),
        "value_sizes": np.array([np.size(v) for v in chain.values], dtype=np.int64),
        "scores": np.array([chain.lnl, chain.lnpr, chain.best_lnl], dtype=np.float64),
        "part_lnl": np.array([p.inc.lnl for p in chain.parts], dtype=np.float64),
        "rng": rng_json(chain.rng),
        "core_rng": np.zeros(0, np.uint64) if chain.core_rng is None else np.array(chain.core_rng, np.uint64),
        "move_names": json.dumps([m.name for m in moves]),
        "move_counts": np.array([[m.counts[k] for k in COUNT_KEYS] for m in moves], dtype=np.int64),
        "move_last_rate": np.array([np.nan if x is None else x for x in last], dtype=np.float64),
        "move_tuning": json.dumps([move_tuning(m) for m in moves]),
    }


def restore_chain(chain, st: dict, where: str) -> None:
    """Put a captured state back into a freshly built chain (same data, model and moves)."""
    names = json.loads(st["move_names"])
    if names != [m.name for m in chain.moves]:
        raise CheckpointMismatch("%s was written for another model: its moves are %s, this model's are %s"
                                 % (where, ", ".join(names), ", ".join(m.name for m in chain.moves)))
    sizes = st["value_sizes"].tolist()
    trees = chain.trees
    parents = np.reshape(st["parent"], (-1, st["parent"].shape[-1]))
    brlens = np.reshape(st["brlen"], parents.shape)
    if sizes != [int(np.size(v)) for v in chain.values] or parents.shape != (len(trees), trees[0].n_nodes):
        raise CheckpointMismatch("%s was written for another model: its parameter or tree sizes differ" % where)
    offsets = np.cumsum([0] + sizes)
    chain.values = [np.array(st["values"][a:b], dtype=np.float64).reshape(np.shape(v))
                    for a, b, v in zip(offsets[:-1], offsets[1:], chain.values)]
    chain.trees = restored_trees(trees, parents, brlens, st, where)
    chain.lnl, chain.lnpr, chain.best_lnl = (float(x) for x in st["scores"])
    if has_clock(st):
        check_prior(chain, where)
    set_rng(chain.rng, st["rng"])
    core = st.get("core_rng")                 # the compiled core's stream (mbgpu.core.rng), when it ran
    chain.core_rng = None if core is None or np.size(core) == 0 else np.array(core, dtype=np.uint64)
    tunings = json.loads(st["move_tuning"])
    for m, counts, last, tun in zip(chain.moves, st["move_counts"].tolist(), st["move_last_rate"].tolist(),
                                    tunings):
        m.counts = dict(zip(COUNT_KEYS, (int(c) for c in counts)))
        if not math.isnan(last):
            m.counts["last_rate"] = float(last)
        set_move_tuning(m, tun)
    rebuild_caches(chain, st["part_lnl"], where)


def restored_trees(fresh: list, parents: np.ndarray, brlens: np.ndarray, st: dict, where: str) -> list:
    """The chain's trees from the stored arrays; a clock chain's from its clock state, whose unrooted view
    must be the stored (parent, brlen) exactly."""
    if has_clock(st) != is_clock(fresh):
        raise CheckpointMismatch("%s was written for another model: its tree is %s, this model's is %s"
                                 % (where, *(("a clock tree", "unconstrained") if has_clock(st)
                                             else ("unconstrained", "a clock tree"))))
    if not has_clock(st):
        return [Tree(fresh[0].n_tips, p.astype(np.int64), b.astype(np.float64)) for p, b in zip(parents, brlens)]
    tree = restore_clock(fresh[0], st, where)
    if not (np.array_equal(tree.parent, parents[0]) and np.array_equal(tree.brlen, brlens[0])):
        raise CheckpointMismatch("%s: its clock tree does not match its stored unrooted tree" % where)
    return [tree]


def check_prior(chain, where: str) -> None:
    """A clock chain's log prior recomputed from the restored trees and values must be the stored one (the
    clock state is more than the unrooted tree that the likelihood check covers: rate, depths, parameters)."""
    try:
        got = chain.prior_fn.of_trees(chain.trees, chain.values)
    except (ValueError, ArithmeticError):      # math domain errors: parameters no move would propose
        got = math.nan
    if not math.isclose(got, chain.lnpr, rel_tol=LNL_RTOL, abs_tol=LNL_RTOL):
        raise CheckpointMismatch("%s: the log prior recomputed from the stored clock tree (%.10g) differs from the "
                                 "stored one (%.10g)" % (where, got, chain.lnpr))


def rebuild_caches(chain, stored_part_lnl: np.ndarray, where: str) -> None:
    """Recompute every partition's likelihood from scratch and check it against the stored values.
    A reweighted chain (mcmc reweight: chain.sum_parts) keeps the stored values unchecked: after a heat
    swap they stay on its former rank's weights until a move recomputes them, as in MrBayes."""
    if stored_part_lnl.size != len(chain.parts):
        raise CheckpointMismatch("%s was written for another model: %d likelihood partitions, not %d"
                                 % (where, stored_part_lnl.size, len(chain.parts)))
    for part, stored in zip(chain.parts, stored_part_lnl.tolist()):
        part.inc.tree = None  # forces a full recomputation into fresh slots
        mult = rate_multiplier(chain.params, chain.values, part.division, part.fixed_mult)
        got = part.inc.propose(chain.trees[part.tree], chain._model_of(part, chain.values), mult)
        part.inc.accept()
        if not chain.sum_parts and not math.isclose(got, stored, rel_tol=LNL_RTOL, abs_tol=LNL_RTOL):
            raise CheckpointMismatch("%s: the log likelihood recomputed from the stored state (%.10g) differs "
                                     "from the stored one (%.10g): other data, model or backend precision"
                                     % (where, got, stored))
        part.inc.lnl = float(stored)
    total = sum(p.inc.lnl for p in chain.parts)
    if chain.parts and not chain.sum_parts and not math.isclose(total, chain.lnl, rel_tol=LNL_RTOL, abs_tol=LNL_RTOL):
        raise CheckpointMismatch("%s: stored log likelihood %.10g is not the sum of its partitions (%.10g)"
                                 % (where, chain.lnl, total))
