"""numba kernels of the compiled CPU likelihood backend (mbgpu.likelihood.compiled_backend).

Plain arrays in, plain arrays out; no Python objects inside, no object mode. Shapes as in
mbgpu.likelihood.protocol: partials (n_partials, C, P, S), tip states uint8 (n_tips, P) with values
>= S meaning "any state", tip partials packed (K, 1, P, S) (a category axis of
length 1, so that they read like a partial buffer) with `tip_slot[t]` the row of tip t (-1: compact
states), matrices (M, C, S, S) with P[m, c, i, j] = P(j at the child | i at the parent),
scale buffers (n_scale, P) of natural-log factors.

Every pattern is independent of every other through a whole operation list (a node's pattern p
reads only its children's pattern p, rescaling is per pattern), so the drivers run ALL operations on
one block of patterns before the next block: the block stays in cache along the tree, and the
threaded driver hands whole blocks to threads (`prange` over blocks) with one parallel region per
call. Results do not depend on the block size or the thread count.

Node classes (BEAGLE/MrBayes names): `down_3` two compact tips, `down_12` a compact tip and a
partial child, `down_0` two partial children (internal nodes or tips given as partials: those are
read with category stride 0). Four-state variants are unrolled by hand.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS


_JIT = JIT_OPTIONS
LOG2 = math.log(2.0)


# ---------------------------------------------------------------------------- node classes, any S
@numba.njit(**_JIT)
def down_3(dest, st1, m1, st2, m2, p0, p1):
    """dest[c, p, i] = P1[c, i, s1] * P2[c, i, s2] (a state >= S contributes 1)."""
    n_cat, _, n_states = dest.shape
    for c in range(n_cat):
        dc = dest[c]
        a1 = m1[c]
        a2 = m2[c]
        for p in range(p0, p1):
            a = st1[p]
            b = st2[p]
            for i in range(n_states):
                x = a1[i, a] if a < n_states else 1.0
                y = a2[i, b] if b < n_states else 1.0
                dc[p, i] = x * y


@numba.njit(**_JIT)
def transpose_into(m, out):
    """out[j, i] = m[i, j] (a child's matrix laid out so that the loop over parent states is contiguous)."""
    n = m.shape[0]
    for i in range(n):
        for j in range(n):
            out[j, i] = m[i, j]


@numba.njit(**_JIT)
def down_12(dest, st, mt, x, xs, mx, p0, p1, work):
    """dest = (Px x) * (Pt e_state); x (Cx, P, S) read at category c * xs (xs 0: a tip's partials).

    Sums run over child states j in order; the loop over parent states i is innermost and contiguous
    (vectorised), on the transposed matrix in `work[0]`, accumulating in `work[2]`."""
    n_cat, _, n_states = dest.shape
    tx = work[0]
    acc = work[2, 0]
    for c in range(n_cat):
        transpose_into(mx[c], tx)
        xc = x[c * xs]
        dc = dest[c]
        mtc = mt[c]
        for p in range(p0, p1):
            acc[:] = 0.0
            for j in range(n_states):
                y = xc[p, j]
                for i in range(n_states):
                    acc[i] += tx[j, i] * y
            a = st[p]
            if a < n_states:
                for i in range(n_states):
                    dc[p, i] = acc[i] * mtc[i, a]
            else:
                for i in range(n_states):
                    dc[p, i] = acc[i]


@numba.njit(**_JIT)
def down_0(dest, x1, xs1, m1, x2, xs2, m2, p0, p1, work):
    """dest = (P1 x1) * (P2 x2), both children partial vectors (loop order as down_12)."""
    n_cat, _, n_states = dest.shape
    t1 = work[0]
    t2 = work[1]
    acc1 = work[2, 0]
    acc2 = work[2, 1]
    for c in range(n_cat):
        transpose_into(m1[c], t1)
        transpose_into(m2[c], t2)
        y1 = x1[c * xs1]
        y2 = x2[c * xs2]
        dc = dest[c]
        for p in range(p0, p1):
            acc1[:] = 0.0
            acc2[:] = 0.0
            for j in range(n_states):
                a = y1[p, j]
                b = y2[p, j]
                for i in range(n_states):
                    acc1[i] += t1[j, i] * a
                    acc2[i] += t2[j, i] * b
            for i in range(n_states):
                dc[p, i] = acc1[i] * acc2[i]


# ---------------------------------------------------------------------------- node classes, S = 4
@numba.njit(**_JIT)
def down_12_4(dest, st, mt, x, xs, mx, p0, p1, work):
    """down_12 unrolled for four states."""
    n_cat = dest.shape[0]
    for c in range(n_cat):
        cx = c * xs
        a00, a01, a02, a03 = mx[c, 0, 0], mx[c, 0, 1], mx[c, 0, 2], mx[c, 0, 3]
        a10, a11, a12, a13 = mx[c, 1, 0], mx[c, 1, 1], mx[c, 1, 2], mx[c, 1, 3]
        a20, a21, a22, a23 = mx[c, 2, 0], mx[c, 2, 1], mx[c, 2, 2], mx[c, 2, 3]
        a30, a31, a32, a33 = mx[c, 3, 0], mx[c, 3, 1], mx[c, 3, 2], mx[c, 3, 3]
        xc = x[cx]
        dc = dest[c]
        tt = work[0]                       # P_tip^T with a row of ones for "any state"
        for j in range(4):
            for i in range(4):
                tt[j, i] = mt[c, i, j]
            tt[4, j] = 1.0
        for p in range(p0, p1):
            y0, y1, y2, y3 = xc[p, 0], xc[p, 1], xc[p, 2], xc[p, 3]
            a = min(st[p], 4)
            dc[p, 0] = (a00 * y0 + a01 * y1 + a02 * y2 + a03 * y3) * tt[a, 0]
            dc[p, 1] = (a10 * y0 + a11 * y1 + a12 * y2 + a13 * y3) * tt[a, 1]
            dc[p, 2] = (a20 * y0 + a21 * y1 + a22 * y2 + a23 * y3) * tt[a, 2]
            dc[p, 3] = (a30 * y0 + a31 * y1 + a32 * y2 + a33 * y3) * tt[a, 3]


@numba.njit(**_JIT)
def down_0_4(dest, x1, xs1, m1, x2, xs2, m2, p0, p1):
    """down_0 unrolled for four states (the matrices of a category held in registers)."""
    n_cat = dest.shape[0]
    for c in range(n_cat):
        c1 = c * xs1
        c2 = c * xs2
        a00, a01, a02, a03 = m1[c, 0, 0], m1[c, 0, 1], m1[c, 0, 2], m1[c, 0, 3]
        a10, a11, a12, a13 = m1[c, 1, 0], m1[c, 1, 1], m1[c, 1, 2], m1[c, 1, 3]
        a20, a21, a22, a23 = m1[c, 2, 0], m1[c, 2, 1], m1[c, 2, 2], m1[c, 2, 3]
        a30, a31, a32, a33 = m1[c, 3, 0], m1[c, 3, 1], m1[c, 3, 2], m1[c, 3, 3]
        b00, b01, b02, b03 = m2[c, 0, 0], m2[c, 0, 1], m2[c, 0, 2], m2[c, 0, 3]
        b10, b11, b12, b13 = m2[c, 1, 0], m2[c, 1, 1], m2[c, 1, 2], m2[c, 1, 3]
        b20, b21, b22, b23 = m2[c, 2, 0], m2[c, 2, 1], m2[c, 2, 2], m2[c, 2, 3]
        b30, b31, b32, b33 = m2[c, 3, 0], m2[c, 3, 1], m2[c, 3, 2], m2[c, 3, 3]
        u1 = x1[c1]
        u2 = x2[c2]
        dc = dest[c]
        for p in range(p0, p1):
            y0, y1, y2, y3 = u1[p, 0], u1[p, 1], u1[p, 2], u1[p, 3]
            z0, z1, z2, z3 = u2[p, 0], u2[p, 1], u2[p, 2], u2[p, 3]
            dc[p, 0] = (a00 * y0 + a01 * y1 + a02 * y2 + a03 * y3) * (b00 * z0 + b01 * z1 + b02 * z2 + b03 * z3)
            dc[p, 1] = (a10 * y0 + a11 * y1 + a12 * y2 + a13 * y3) * (b10 * z0 + b11 * z1 + b12 * z2 + b13 * z3)
            dc[p, 2] = (a20 * y0 + a21 * y1 + a22 * y2 + a23 * y3) * (b20 * z0 + b21 * z1 + b22 * z2 + b23 * z3)
            dc[p, 3] = (a30 * y0 + a31 * y1 + a32 * y2 + a33 * y3) * (b30 * z0 + b31 * z1 + b32 * z2 + b33 * z3)


# ---------------------------------------------------------------------------- scaling of one node
@numba.njit(**_JIT)
def rescale_write(dest, scale_row, p0, p1):
    """Divide each pattern by its largest entry (1 where all are <= 0); store log(factor)."""
    n_cat, _, n_states = dest.shape
    for p in range(p0, p1):
        largest = dest[0, p, 0]
        for c in range(n_cat):
            for i in range(n_states):
                if dest[c, p, i] > largest:
                    largest = dest[c, p, i]
        if largest <= 0.0:
            largest = 1.0
        for c in range(n_cat):
            for i in range(n_states):
                dest[c, p, i] /= largest
        scale_row[p] = math.log(largest)


@numba.njit(**_JIT)
def rescale_read(dest, scale_row, p0, p1):
    """Divide each pattern by an existing factor: dest *= exp(-scale)."""
    n_cat, _, n_states = dest.shape
    for p in range(p0, p1):
        f = math.exp(-scale_row[p])
        for c in range(n_cat):
            for i in range(n_states):
                dest[c, p, i] *= f


# ---------------------------------------------------------------------------- operations
@numba.njit(**_JIT)
def _child(b, n_tips, partials, tip_slot, tip_partials):
    """(partial array, category stride) of a child that is not a compact tip."""
    if b < n_tips:
        return tip_partials[tip_slot[b]], 0
    return partials[b - n_tips], 1


@numba.njit(**_JIT)
def ops_block(ops, partials, tip_states, tip_slot, tip_partials, matrices, scale, n_tips, p0, p1):
    """Every operation of `ops`, in order, on patterns [p0, p1)."""
    n_states = partials.shape[3]
    four = n_states == 4
    work = np.empty((3, max(n_states + 1, 2), n_states))     # two transposed matrices, two accumulators
    for r in range(ops.shape[0]):
        d, sw, sr, c1, m1, c2, m2 = ops[r, 0], ops[r, 1], ops[r, 2], ops[r, 3], ops[r, 4], ops[r, 5], ops[r, 6]
        dest = partials[d - n_tips]
        compact1 = c1 < n_tips and tip_slot[c1] < 0
        compact2 = c2 < n_tips and tip_slot[c2] < 0
        if compact1 and compact2:
            down_3(dest, tip_states[c1], matrices[m1], tip_states[c2], matrices[m2], p0, p1)
        elif compact1 or compact2:
            t, mt, o, mo = (c1, m1, c2, m2) if compact1 else (c2, m2, c1, m1)
            x, xs = _child(o, n_tips, partials, tip_slot, tip_partials)
            if four:
                down_12_4(dest, tip_states[t], matrices[mt], x, xs, matrices[mo], p0, p1, work)
            else:
                down_12(dest, tip_states[t], matrices[mt], x, xs, matrices[mo], p0, p1, work)
        else:
            x1, xs1 = _child(c1, n_tips, partials, tip_slot, tip_partials)
            x2, xs2 = _child(c2, n_tips, partials, tip_slot, tip_partials)
            if four:
                down_0_4(dest, x1, xs1, matrices[m1], x2, xs2, matrices[m2], p0, p1)
            else:
                down_0(dest, x1, xs1, matrices[m1], x2, xs2, matrices[m2], p0, p1, work)
        if sw >= 0:
            rescale_write(dest, scale[sw], p0, p1)
        elif sr >= 0:
            rescale_read(dest, scale[sr], p0, p1)


@numba.njit(**_JIT)
def update_partials_serial(ops, partials, tip_states, tip_slot, tip_partials, matrices, scale, n_tips, block):
    """All operations, block of patterns by block of patterns, on the calling thread."""
    n_patterns = partials.shape[2]
    n_blocks = (n_patterns + block - 1) // block
    for k in range(n_blocks):
        ops_block(ops, partials, tip_states, tip_slot, tip_partials, matrices, scale, n_tips,
                  k * block, min(n_patterns, (k + 1) * block))


@numba.njit(parallel=True, **_JIT)
def update_partials_parallel(ops, partials, tip_states, tip_slot, tip_partials, matrices, scale, n_tips, block):
    """As update_partials_serial with the blocks spread over numba's threads (numba.set_num_threads)."""
    n_patterns = partials.shape[2]
    n_blocks = (n_patterns + block - 1) // block
    for k in numba.prange(n_blocks):
        ops_block(ops, partials, tip_states, tip_slot, tip_partials, matrices, scale, n_tips,
                  k * block, min(n_patterns, (k + 1) * block))


# ---------------------------------------------------------------------------- scale buffers
@numba.njit(**_JIT)
def add_scales(scale, cumulative, indices, sign):
    """scale[cumulative] += sign * sum of scale[indices] (summed in the listed order, row by row)."""
    n_patterns = scale.shape[1]
    total = np.zeros(n_patterns)
    for k in range(indices.shape[0]):
        row = scale[indices[k]]
        for p in range(n_patterns):
            total[p] += row[p]
    out = scale[cumulative]
    for p in range(n_patterns):
        out[p] += sign * total[p]


# ---------------------------------------------------------------------------- root
@numba.njit(**_JIT)
def _logaddexp(x, y):
    """numpy.logaddexp for two floats."""
    if x == y:
        return x + LOG2
    d = x - y
    if d > 0.0:
        return x + math.log1p(math.exp(-d))
    if d <= 0.0:
        return y + math.log1p(math.exp(d))
    return d


@numba.njit(**_JIT)
def site_log_likelihoods(root, child_kind, child_states, child_x, child_xs, child_matrix, freqs, weights,
                         pinvar, scale_row, use_scale, compat, out):
    """log L_p per pattern into `out`: root partials (times P x child for child_kind 1: compact tip,
    2: partial vector; 0: none), weighted over categories and states, plus log scale, plus +I."""
    n_cat, n_patterns, n_states = root.shape
    site = np.zeros(n_patterns)
    for c in range(n_cat):
        _root_category(root[c], child_kind, child_states, child_x[c * child_xs], child_matrix[c], freqs,
                       weights[c], site)
    log_var = math.log1p(-pinvar) if pinvar > 0.0 else 0.0
    for p in range(n_patterns):
        x = site[p]
        scale = scale_row[p] if use_scale else 0.0
        inv = 0.0
        if pinvar > 0.0:
            for i in range(n_states):
                inv += compat[p, i] * freqs[i]
        if inv <= 0.0:                            # no invariant term: the usual case
            out[p] = (math.log(x) if x > 0.0 else -math.inf) + scale + log_var
        elif -scale < 600.0:                      # exp(-scale) is finite: add in linear space
            out[p] = scale + math.log((1.0 - pinvar) * x + pinvar * inv * math.exp(-scale))
        else:
            ln = (math.log(x) if x > 0.0 else -math.inf) + scale
            out[p] = _logaddexp(ln + log_var, math.log(pinvar * inv))


@numba.njit(**_JIT)
def _root_category(r, child_kind, child_states, x, m, freqs, w, site):
    """site[p] += w sum_i freqs[i] r[p, i] (P x)[p, i] for one category (x: the child's vectors)."""
    n_patterns, n_states = r.shape
    if n_states == 4 and child_kind == 2:
        f0, f1, f2, f3 = w * freqs[0], w * freqs[1], w * freqs[2], w * freqs[3]
        a00, a01, a02, a03 = m[0, 0], m[0, 1], m[0, 2], m[0, 3]
        a10, a11, a12, a13 = m[1, 0], m[1, 1], m[1, 2], m[1, 3]
        a20, a21, a22, a23 = m[2, 0], m[2, 1], m[2, 2], m[2, 3]
        a30, a31, a32, a33 = m[3, 0], m[3, 1], m[3, 2], m[3, 3]
        for p in range(n_patterns):
            y0, y1, y2, y3 = x[p, 0], x[p, 1], x[p, 2], x[p, 3]
            site[p] += (f0 * r[p, 0] * (a00 * y0 + a01 * y1 + a02 * y2 + a03 * y3)
                        + f1 * r[p, 1] * (a10 * y0 + a11 * y1 + a12 * y2 + a13 * y3)
                        + f2 * r[p, 2] * (a20 * y0 + a21 * y1 + a22 * y2 + a23 * y3)
                        + f3 * r[p, 3] * (a30 * y0 + a31 * y1 + a32 * y2 + a33 * y3))
        return
    for p in range(n_patterns):
        total = 0.0
        if child_kind == 2:
            for i in range(n_states):
                a = 0.0
                for j in range(n_states):
                    a += m[i, j] * x[p, j]
                total += freqs[i] * r[p, i] * a
        elif child_kind == 1 and child_states[p] < n_states:
            k = child_states[p]
            for i in range(n_states):
                total += freqs[i] * r[p, i] * m[i, k]
        else:
            for i in range(n_states):
                total += freqs[i] * r[p, i]
        site[p] += w * total


@numba.njit(**_JIT)
def weighted_sum(weights, values):
    """sum_p weights[p] * values[p] with Neumaier's compensated summation."""
    total = 0.0
    comp = 0.0
    for p in range(values.shape[0]):
        x = weights[p] * values[p]
        t = total + x
        if abs(total) >= abs(x):
            comp += (total - t) + x
        else:
            comp += (x - t) + total
        total = t
    return total + comp
