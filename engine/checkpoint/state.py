"""The whole sampler's state as one flat dict {path: array or str}, and its restoration.

`capture(mc3, sink)` and `restore(mc3, sink, state)` are the only entry points the run driver needs.
Paths are the HDF5 dataset names ('mc3/ranks', 'chains/run0_chain1/brlen', ...). A distributed driver
captures its local chains with `capture_chain` (mbgpu.checkpoint.chain_state), gathers those dicts on
rank 0 and passes them as `chain_states={(run, chain): dict}`; on resume it hands every rank
`chain_state(state, run, chain)` for its chains. See docs/checkpoints.md for the layout.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.checkpoint.chain_state import capture_chain, chain_key, restore_chain, rng_json, set_rng
from mbgpu.checkpoint.errors import CheckpointMismatch


def capture(mc3, sink, chain_states: dict | None = None) -> dict:
    """Everything needed to continue `mc3` and its output exactly (output offsets: sink.offsets())."""
    st: dict = {}
    for r, chains in enumerate(mc3.runs):
        for c, chain in enumerate(chains):
            sub = chain_states[(r, c)] if chain_states is not None else capture_chain(chain)
            st.update({"%s/%s" % (chain_key(r, c), k): v for k, v in sub.items()})
    st["mc3/generation"] = np.array([mc3.gen], dtype=np.int64)
    st["mc3/ranks"] = np.array(mc3.ranks, dtype=np.int64)
    st["mc3/swap_tried"] = np.array([t.tried for t in mc3.swaps], dtype=np.int64)
    st["mc3/swap_accepted"] = np.array([t.accepted for t in mc3.swaps], dtype=np.int64)
    st["mc3/swap_rng"] = rng_json(mc3.swap_rng)
    st.update(capture_sink(sink))
    return st


def chain_state(state: dict, run: int, chain: int) -> dict:
    """The sub-dict of one chain (keys relative to its group), e.g. to send it to the rank that owns it."""
    prefix = chain_key(run, chain) + "/"
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def restore_chains(runs, state: dict, where: str) -> None:
    """Restore every chain of `runs` (built from the same settings; None: not ours) and rebuild its caches."""
    for r, chains in enumerate(runs):
        for c, chain in enumerate(chains):
            if chain is None:  # built on another process (build_runs owned=)
                continue
            sub = chain_state(state, r, c)
            if not sub:
                raise CheckpointMismatch("%s holds no state for run %d chain %d (other nruns/nchains)"
                                         % (where, r + 1, c + 1))
            restore_chain(chain, sub, "%s (run %d, chain %d)" % (where, r + 1, c + 1))


def restore(mc3, sink, state: dict, where: str = "checkpoint", chains: bool = True) -> None:
    """Put `state` back into a freshly built MC3 and a sink opened for appending."""
    if chains:
        restore_chains(mc3.runs, state, where)
    mc3.gen = int(state["mc3/generation"][0])
    mc3.ranks = [list(map(int, row)) for row in state["mc3/ranks"]]
    for table, tried, acc in zip(mc3.swaps, state["mc3/swap_tried"].tolist(), state["mc3/swap_accepted"].tolist()):
        table.tried, table.accepted = tried, acc
    set_rng(mc3.swap_rng, state["mc3/swap_rng"])
    restore_sink(sink, state)


def capture_sink(sink) -> dict:
    """The split counter (ASDSF accumulator) and the last diagnostic; output offsets are recorded apart."""
    st = {}
    for k, counter in enumerate(sink.tree_splits):       # several trees (unlink topology): splits2/, ...
        st.update(capture_splits(counter, _splits_key(k)))
    last = sink.last_stat if isinstance(sink.last_stat, list) else [sink.last_stat]   # one per tree
    st["sink/last_stat"] = np.array([np.nan if v is None else v for v in last], dtype=np.float64)
    return st


def restore_sink(sink, state: dict) -> None:
    for k, counter in enumerate(sink.tree_splits):
        restore_splits(counter, state, _splits_key(k))
    last = [float(v) for v in state["sink/last_stat"]]
    sink.last_stat = (None if math.isnan(last[0]) else last[0]) if len(last) == 1 else last


def _splits_key(k: int) -> str:
    return "splits" if k == 0 else "splits%d" % (k + 1)


def capture_splits(counter, key: str = "splits") -> dict:
    """Every sampled tree's split ids per run; ids index `keys` (bitsets, little-endian bytes)."""
    index: dict[int, int] = {}
    sizes, ids = [], []
    for trees in counter.samples:
        sizes.append([len(t) for t in trees])
        for t in trees:
            ids.extend(index.setdefault(s, len(index)) for s in t)
    nbytes = (counter.n_taxa + 7) // 8
    keys = np.zeros((len(index), nbytes), dtype=np.uint8)
    for s, i in index.items():
        keys[i] = np.frombuffer(s.to_bytes(nbytes, "little"), dtype=np.uint8)
    n = max((len(x) for x in sizes), default=0)
    if any(len(x) != n for x in sizes):
        raise AssertionError("all runs sample together")
    return {key + "/keys": keys, key + "/sample_sizes": np.array(sizes, dtype=np.int64).reshape(len(sizes), n),
            key + "/ids": np.array(ids, dtype=np.int32)}


def restore_splits(counter, state: dict, key: str = "splits") -> None:
    if key + "/keys" not in state:
        raise CheckpointMismatch("the checkpoint has no split counts for tree %s: it was written for another "
                                 "model" % (key[6:] or "1"))
    keys = [int.from_bytes(row.tobytes(), "little") for row in state[key + "/keys"]]
    ids = state[key + "/ids"].tolist()
    sizes = state[key + "/sample_sizes"]
    if sizes.shape[0] != counter.n_runs:
        raise CheckpointMismatch("the checkpoint's split counts are for %d runs, not %d"
                                 % (sizes.shape[0], counter.n_runs))
    pos = 0
    counter.samples = []
    for row in sizes.tolist():
        trees = []
        for n in row:
            trees.append(tuple(keys[i] for i in ids[pos:pos + n]))
            pos += n
        counter.samples.append(trees)


def describe(state: dict) -> str:
    """A one-line summary for notes and tests."""
    ranks = state["mc3/ranks"]
    return "generation %d, %d runs x %d chains" % (int(state["mc3/generation"][0]), ranks.shape[0], ranks.shape[1])

