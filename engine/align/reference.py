"""Exact numpy/CPU Needleman-Wunsch with a linear gap penalty: scores row by row, traceback by Hirschberg.

Row i of the score matrix H follows from row i-1 in closed form: with
t[j] = max(H[i-1][j-1] + S(a_i, b_j), H[i-1][j] - g) and t[0] = -g*i, the horizontal gap chain gives
H[i][j] = max_{k<=j} (t[k] + g*k) - g*j, one cumulative maximum. All arithmetic is int64, so exact.
Traceback is Hirschberg's divide and conquer (linear memory), with a full-matrix base case.
"""
from __future__ import annotations

import numpy as np

OP_MATCH, OP_INS, OP_DEL = 0, 1, 2  # diag; A residue against a gap (I); B residue against a gap (D)
_BASE_CELLS = 1 << 21  # sub-problems up to this many cells are traced back from a full matrix


def _profile(b: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """int64 [alphabet, len(b)]: the score of each letter against every residue of `b`."""
    return scores[:, b].astype(np.int64)


def last_row(a: np.ndarray, b: np.ndarray, scores: np.ndarray, gap: int) -> np.ndarray:
    """Row len(a) of the NW matrix of `a` (rows) against `b` (columns): int64 [len(b)+1]."""
    n = len(b)
    gk = gap * np.arange(n + 1, dtype=np.int64)
    row = -gk
    prof = _profile(b, scores)
    t = np.empty(n + 1, dtype=np.int64)
    for i in range(1, len(a) + 1):
        t[0] = -gap * i
        np.maximum(row[:-1] + prof[a[i - 1]], row[1:] - gap, out=t[1:])
        t += gk
        np.maximum.accumulate(t, out=t)
        row = t - gk
    return row


def score(a: np.ndarray, b: np.ndarray, scores: np.ndarray, gap: int) -> int:
    """The optimal global alignment score of codes `a` and `b`."""
    if len(a) < len(b):  # fewer, longer rows are faster in numpy; the score is symmetric in a and b
        return int(last_row(b, a, scores.T, gap)[-1])
    return int(last_row(a, b, scores, gap)[-1])


def _full_matrix(a, b, scores, gap) -> np.ndarray:
    """The whole (len(a)+1) x (len(b)+1) score matrix (small problems only)."""
    n = len(b)
    gk = gap * np.arange(n + 1, dtype=np.int64)
    out = np.empty((len(a) + 1, n + 1), dtype=np.int64)
    out[0] = -gk
    prof = _profile(b, scores)
    t = np.empty(n + 1, dtype=np.int64)
    for i in range(1, len(a) + 1):
        t[0] = -gap * i
        np.maximum(out[i - 1, :-1] + prof[a[i - 1]], out[i - 1, 1:] - gap, out=t[1:])
        t += gk
        out[i] = np.maximum.accumulate(t) - gk
    return out


def _trace_full(a, b, scores, gap) -> list[int]:
    """Ops (forward order) of an optimal alignment read back from the full matrix; diagonal preferred."""
    h = _full_matrix(a, b, scores, gap)
    i, j, ops = len(a), len(b), []
    while i > 0 or j > 0:
        if i > 0 and j > 0 and h[i, j] == h[i - 1, j - 1] + scores[a[i - 1], b[j - 1]]:
            ops.append(OP_MATCH)
            i, j = i - 1, j - 1
        elif i > 0 and h[i, j] == h[i - 1, j] - gap:
            ops.append(OP_INS)
            i -= 1
        else:
            ops.append(OP_DEL)
            j -= 1
    return ops[::-1]


def _hirschberg(a, b, scores, gap, out: list[int]) -> None:
    """Append to `out` the ops of an optimal alignment of `a` and `b` (divide and conquer on rows)."""
    if len(a) == 0:
        out.extend([OP_DEL] * len(b))
        return
    if len(b) == 0:
        out.extend([OP_INS] * len(a))
        return
    if (len(a) + 1) * (len(b) + 1) <= _BASE_CELLS or len(a) == 1:
        out.extend(_trace_full(a, b, scores, gap))
        return
    mid = len(a) // 2
    fwd = last_row(a[:mid], b, scores, gap)
    bwd = last_row(a[mid:][::-1], b[::-1], scores, gap)[::-1]
    k = int(np.argmax(fwd + bwd))
    _hirschberg(a[:mid], b[:k], scores, gap, out)
    _hirschberg(a[mid:], b[k:], scores, gap, out)


def traceback(a: np.ndarray, b: np.ndarray, scores: np.ndarray, gap: int) -> np.ndarray:
    """uint8 ops (OP_MATCH / OP_INS / OP_DEL) of one optimal global alignment, in forward order."""
    out: list[int] = []
    _hirschberg(np.asarray(a), np.asarray(b), scores, gap, out)
    return np.asarray(out, dtype=np.uint8)
