"""Fitch parsimony on bit planes, for ParsSPR on large data.

A pattern set's state-set masks are packed as one plane per state of 64-pattern words (uint64
[k, n_words] per node), so a numpy call treats 64 patterns at once, and a candidate's weighted count of
missed patterns is a popcount against the bit planes of the integer weights. Costs are the same
integers as the per-pattern formulas (mbgpu.moves.parsimony), so proposals do not change.
"""
from __future__ import annotations

import numpy as np

AVAILABLE = hasattr(np, "bitwise_count")   # numpy >= 2.0; otherwise ParsSPR keeps the per-pattern path


class PlaneOps:
    """Set operations on packed planes: sets are uint64 [k, n_words]; per-pattern flags uint64 [n_words]."""

    @staticmethod
    def empty(x: np.ndarray) -> np.ndarray:
        return ~np.bitwise_or.reduce(x, axis=0)

    @staticmethod
    def subset(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Per pattern: a is a subset of b."""
        return ~np.bitwise_or.reduce(a & ~b, axis=0)

    @staticmethod
    def select(cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """a where the pattern's flag bits are set, b elsewhere."""
        return b ^ ((a ^ b) & cond)


def _pack_rows(bits: np.ndarray) -> np.ndarray:
    """bool [..., n] -> uint64 [..., ceil(n / 64)], pattern j in bit j % 64 of word j // 64."""
    packed = np.packbits(bits, axis=-1, bitorder="little")
    pad = (-packed.shape[-1]) % 8
    if pad:
        packed = np.concatenate([packed, np.zeros(packed.shape[:-1] + (pad,), np.uint8)], axis=-1)
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64, copy=False)


def pack_masks(masks: np.ndarray, n_states: int) -> np.ndarray:
    """uint [n_rows, n_patterns] state-set masks -> uint64 [n_rows, n_states, n_words] planes."""
    m = np.asarray(masks, dtype=np.uint64)
    shifts = np.arange(n_states, dtype=np.uint64)[None, :, None]
    return _pack_rows(((m[:, None, :] >> shifts) & np.uint64(1)).astype(bool))


def integer_weights(w: np.ndarray) -> np.ndarray | None:
    """w as int64 when every weight is a non-negative integer below 2**40 (else None: use the per-pattern path)."""
    w = np.asarray(w, dtype=np.float64)
    if w.size and (w.min() < 0 or w.max() >= 2.0 ** 40 or not np.all(w == np.floor(w))):
        return None
    return w.astype(np.int64)


def weight_planes(w: np.ndarray) -> np.ndarray:
    """Bit planes of non-negative integer weights: uint64 [n_bits, n_words], bit b of w[j] in plane b."""
    n_bits = max(int(w.max()).bit_length(), 1) if w.size else 1
    return _pack_rows(((w[None, :] >> np.arange(n_bits, dtype=np.int64)[:, None]) & 1).astype(bool))


def missed_weights(final: dict, s_set: np.ndarray, w: np.ndarray, xs, ys) -> np.ndarray:
    """For each branch (xs[j], ys[j]): the total weight of the patterns where neither end's final set meets
    `s_set` (planes), with integer weights `w` (int64 [n_patterns]); float64 [n_branches]."""
    nodes = sorted(set(xs) | set(ys))
    row = {v: i for i, v in enumerate(nodes)}
    meets = np.bitwise_or.reduce(np.stack([final[v] for v in nodes]) & s_set, axis=1)   # [m, W]: F[v] meets S
    ix = np.fromiter((row[x] for x in xs), np.int64, len(xs))
    iy = np.fromiter((row[y] for y in ys), np.int64, len(ys))
    miss = ~(meets[ix] | meets[iy])                               # [c, W]: neither end meets S
    planes = weight_planes(w)
    total = np.zeros(len(xs), dtype=np.int64)
    for b, plane in enumerate(planes):                            # padding bits of a plane are 0
        words = np.flatnonzero(plane)
        if 2 * words.size < plane.size:                           # high bits: only a few heavy patterns
            hits = np.bitwise_count(miss[:, words] & plane[words])
        else:
            hits = np.bitwise_count(miss & plane)
        total += hits.sum(axis=1, dtype=np.int64) << b
    return total.astype(np.float64)
