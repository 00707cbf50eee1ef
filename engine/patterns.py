"""Site patterns: identical columns of a division compressed into patterns with weights.

Tips are held as state-set bit masks; `tip_partials` gives the 0/1 partial vectors the likelihood
needs (ambiguity allowed) and `tip_states` the compact codes (-1 where a tip is ambiguous).
Standard (morphology) data is split by state count k (highest observed state + 1, at least 2),
as MrBayes evaluates each k under its own Mk model, and by `ctype ordered` (k > 2: its own Q).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.datatypes import STATES


@dataclass
class PatternSet:
    """Compressed columns of one division (or one k-group of a standard division)."""

    datatype: str
    n_states: int
    masks: np.ndarray  # uint32 [ntax, n_patterns]
    weights: np.ndarray  # float64 [n_patterns]
    columns: np.ndarray  # int64: the original 0-based columns this set covers
    ordered: bool = False  # standard data under `ctype ordered` (k > 2): changes between adjacent states only

    @property
    def n_patterns(self) -> int:
        return self.masks.shape[1]

    def tip_partials(self) -> np.ndarray:
        """float64 [ntax, n_patterns, n_states]: 1 for each state a tip allows."""
        bits = (self.masks[:, :, None] >> np.arange(self.n_states, dtype=np.uint32)) & 1
        return bits.astype(np.float64)

    def tip_states(self) -> np.ndarray:
        """int8 [ntax, n_patterns]: the state index, or -1 where more than one state is allowed."""
        out = np.full(self.masks.shape, -1, dtype=np.int8)
        for s in range(self.n_states):
            out[self.masks == (1 << s)] = s
        return out


def compress(masks: np.ndarray, datatype: str, n_states: int, columns: np.ndarray,
             ordered: bool = False) -> PatternSet:
    """Unique columns of `masks[:, columns]` with their counts (order of first appearance)."""
    sub = masks[:, columns]
    if sub.shape[1] == 0:
        return PatternSet(datatype, n_states, sub, np.zeros(0), columns, ordered)
    _, first, counts = np.unique(sub.T, axis=0, return_index=True, return_counts=True)
    order = np.argsort(first)
    return PatternSet(datatype, n_states, sub[:, first[order]], counts[order].astype(np.float64), columns,
                      ordered)


def division_patterns(masks: np.ndarray, datatype: str, n_states: int, columns: np.ndarray,
                      all_mask: int | None = None, ordered=frozenset(), blank=None) -> list[PatternSet]:
    """Pattern sets of one division; standard data gives one set per state count k, and one more for
    each k > 2 with columns in `ordered` (0-based; a binary ordered character is an unordered one).
    `blank`: the matrix's per-cell codes (CharacterMatrix.blank), which tell `?`/`-` from a set of
    every state (_standard_k)."""
    if datatype != "standard":
        return [compress(masks, datatype, n_states, columns)]
    sub = masks[:, columns]
    ks = _standard_k(sub, all_mask if all_mask is not None else (1 << n_states) - 1,
                     None if blank is None else blank[:, columns])
    is_ordered = np.isin(columns, np.fromiter(ordered, dtype=np.int64, count=len(ordered))) & (ks > 2)
    out = []
    for k, o in sorted(set(zip(ks.tolist(), is_ordered.tolist()))):
        cols = columns[(ks == k) & (is_ordered == o)]
        narrowed = masks.copy()
        narrowed[:, cols] &= np.uint32((1 << k) - 1)
        out.append(compress(narrowed, "standard", int(k), cols, bool(o)))
    return out


def standard_state_counts(masks: np.ndarray, columns: np.ndarray, n_states: int, blank=None) -> np.ndarray:
    """k of each standard column (MrBayes' number of states, what charstat shows)."""
    return _standard_k(masks[:, columns], (1 << n_states) - 1, None if blank is None else blank[:, columns])


def _standard_k(sub: np.ndarray, all_mask: int, blank=None) -> np.ndarray:
    """k for each column of standard data: highest observed symbol + 1, at least 2.

    Missing and gap cells ('?', '-') say nothing about k and are ignored; a written set of every
    symbol (`{0123456789}`) counts, as in MrBayes. Without `blank` (cell codes) a cell allowing every
    symbol is taken for missing.
    """
    unknown = (sub == all_mask) if blank is None else (blank != STATES)
    observed = np.where(unknown, np.uint32(0), sub)
    ors = np.bitwise_or.reduce(observed, axis=0) if sub.shape[0] else np.zeros(sub.shape[1], np.uint32)
    highest = np.array([int(v).bit_length() - 1 if v else 0 for v in ors.tolist()], dtype=np.int64)
    return np.maximum(highest + 1, 2)


def pattern_slice(n_patterns: int, k: int, member: int) -> tuple[int, int]:
    """[lo, hi) of the patterns member `member` of `k` holds (the first members take one more): the
    contiguous slices of mbgpu.mpi.sitesplit's ranks and mbgpu.cuda.split's GPUs.

    >>> [pattern_slice(10, 3, i) for i in range(3)]
    [(0, 4), (4, 7), (7, 10)]
    """
    base, extra = divmod(n_patterns, k)
    lo = member * base + min(member, extra)
    return lo, lo + base + (member < extra)
