"""Exactly rounded sums in compiled code: the bits of Python's math.fsum, without a Python call per row.

A GPU flush returns, per root call, a row of per-block (sum, compensation) pairs that the host adds with
math.fsum; on the GPU machine's host that cost ~17 us a call (a tenth of a DNA 64x50k generation), most of
it converting the rows to Python floats. `fsum_rows` is CPython's algorithm (Shewchuk's non-overlapping
partials, then the round-half-even correction of mathmodule.c's math_fsum) for finite values, so every
total keeps the same bits as before.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def _fsum(row, partials):
    """math.fsum of the finite float64 values `row`, with `partials` (length >= len(row) + 1) as scratch."""
    n = 0
    for k in range(row.shape[0]):
        x = row[k]
        i = 0
        for j in range(n):
            y = partials[j]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        partials[i] = x
        n = i + 1
    hi = 0.0
    if n > 0:
        n -= 1
        hi = partials[n]
        lo = 0.0
        while n > 0:
            x = hi
            n -= 1
            y = partials[n]
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                break
        if n > 0 and ((lo < 0.0 and partials[n - 1] < 0.0) or (lo > 0.0 and partials[n - 1] > 0.0)):
            y = lo * 2.0
            x = hi + y
            if y == x - hi:
                hi = x
    return hi


@numba.njit(**JIT_OPTIONS)
def fsum_rows(values):
    """float64[rows] of math.fsum over each row of the finite float64[rows, n] `values`."""
    out = np.empty(values.shape[0])
    partials = np.empty(values.shape[1] + 1)
    for r in range(values.shape[0]):
        out[r] = _fsum(values[r], partials)
    return out
