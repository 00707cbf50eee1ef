"""The core's likelihood kernels, on partials stored pattern-innermost: (categories, states, patterns).

With patterns innermost every loop over patterns is a plain stride-1 loop that the compiler turns into
SIMD instructions, for any state count (on 4-state data about 2x faster than the state-innermost
kernels of mbgpu.likelihood.compiled_kernels, measured on the development VM). Every child is a
vector `x` read at category `c * xs` (xs 0: a tip, shape (1, S, P), one-hot or ambiguous). Rescaling
is by exact powers of two and only for patterns whose largest entry falls below RESCALE_BELOW; a node
update finds out whether any pattern might need it while its category is still in cache, and the
root's logarithms are computed by a branch-free, vectorisable log (`_log_pass`, fdlibm's).
Partials and matrices may be float64 or float32 (`set beagleprecision=single`: twice the SIMD width,
half the bytes); sites, scales and logarithms are float64 either way.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.extending import overload

from mbgpu.jit import JIT_OPTIONS

LOG2 = math.log(2.0)
RESCALE_BELOW = 2.0 ** -64     # patterns whose largest partial is smaller get rescaled
# in single precision sooner: the product of two children at least this large stays a normal float32
RESCALE_BELOW_SINGLE = 2.0 ** -32
TINY = 2.0 ** -1022            # smallest normal double: the bit-level log takes nothing smaller
# multiply-adds may be fused (FMA: one rounding instead of two), nothing else of IEEE arithmetic changes;
# a division by zero gives inf as in numpy instead of raising (a check that would stop vectorisation)
_FMA = dict(fastmath={"contract"}, error_model="numpy", **JIT_OPTIONS)


def rescale_below(a):
    """The largest partial below which a pattern of partials `a` (float64 or float32) is rescaled."""
    return RESCALE_BELOW if a.dtype == np.float64 else RESCALE_BELOW_SINGLE


@overload(rescale_below, jit_options=JIT_OPTIONS)
def _rescale_below_compiled(a):
    value = RESCALE_BELOW if a.dtype == numba.types.float64 else RESCALE_BELOW_SINGLE
    return lambda a: value


@numba.njit(**_FMA)
def _child_into(out, x, m, n_states):
    """out[i, p] = sum_j m[i, j] x[j, p]."""
    n_patterns = out.shape[1]
    for i in range(n_states):
        row = out[i]
        a = m[i, 0]
        x0 = x[0]
        for p in range(n_patterns):
            row[p] = a * x0[p]
        for j in range(1, n_states):
            a = m[i, j]
            xj = x[j]
            for p in range(n_patterns):
                row[p] += a * xj[p]


@numba.njit(**_FMA)
def _vv4(d, u, a, w, b):
    """One category, four states, two vector children: every state of a pattern in one pass."""
    d0, d1, d2, d3 = d[0], d[1], d[2], d[3]
    u0, u1, u2, u3, w0, w1, w2, w3 = u[0], u[1], u[2], u[3], w[0], w[1], w[2], w[3]
    a00, a01, a02, a03, a10, a11, a12, a13 = a[0, 0], a[0, 1], a[0, 2], a[0, 3], a[1, 0], a[1, 1], a[1, 2], a[1, 3]
    a20, a21, a22, a23, a30, a31, a32, a33 = a[2, 0], a[2, 1], a[2, 2], a[2, 3], a[3, 0], a[3, 1], a[3, 2], a[3, 3]
    b00, b01, b02, b03, b10, b11, b12, b13 = b[0, 0], b[0, 1], b[0, 2], b[0, 3], b[1, 0], b[1, 1], b[1, 2], b[1, 3]
    b20, b21, b22, b23, b30, b31, b32, b33 = b[2, 0], b[2, 1], b[2, 2], b[2, 3], b[3, 0], b[3, 1], b[3, 2], b[3, 3]
    for p in range(d0.shape[0]):
        x0, x1, x2, x3 = u0[p], u1[p], u2[p], u3[p]
        y0, y1, y2, y3 = w0[p], w1[p], w2[p], w3[p]
        d0[p] = (a00 * x0 + a01 * x1 + a02 * x2 + a03 * x3) * (b00 * y0 + b01 * y1 + b02 * y2 + b03 * y3)
        d1[p] = (a10 * x0 + a11 * x1 + a12 * x2 + a13 * x3) * (b10 * y0 + b11 * y1 + b12 * y2 + b13 * y3)
        d2[p] = (a20 * x0 + a21 * x1 + a22 * x2 + a23 * x3) * (b20 * y0 + b21 * y1 + b22 * y2 + b23 * y3)
        d3[p] = (a30 * x0 + a31 * x1 + a32 * x2 + a33 * x3) * (b30 * y0 + b31 * y1 + b32 * y2 + b33 * y3)


@numba.njit(**_FMA)
def _max_count(d, largest, first):
    """largest[p] = max(largest[p] (0 when first), d[:, p]); returns how many largest[p] are below
    rescale_below(d)."""
    n_states, n_patterns = d.shape
    below = rescale_below(d)
    n = 0
    if n_states == 4:
        r0, r1, r2, r3 = d[0], d[1], d[2], d[3]
        for p in range(n_patterns):
            a = r0[p] if r0[p] > r1[p] else r1[p]
            b = r2[p] if r2[p] > r3[p] else r3[p]
            a = a if a > b else b
            g = 0.0 if first else largest[p]
            g = a if a > g else g
            largest[p] = g
            n += g < below
        return n
    if first:
        largest[:] = 0.0
    for i in range(n_states):
        r = d[i]
        for p in range(n_patterns):
            largest[p] = r[p] if r[p] > largest[p] else largest[p]
    for p in range(n_patterns):
        n += largest[p] < below
    return n


@numba.njit(**_FMA)
def node_update(dest, x1, xs1, m1, x2, xs2, m2, work, largest):
    """dest[c] = (P1 child1) * (P2 child2) per category. Returns 0 when every pattern's largest entry
    is at least RESCALE_BELOW (found category by category, the fastest rate first, whose entries are
    the most even: most nodes stop looking after it), else the count of patterns below it, with
    largest[p] then the largest entry of pattern p."""
    n_cat, n_states, n_patterns = dest.shape
    need = n_patterns
    w1, w2 = work[0], work[1]
    for c in range(n_cat - 1, -1, -1):
        d = dest[c]
        if n_states == 4:
            _vv4(d, x1[c * xs1], m1[c], x2[c * xs2], m2[c])
        else:
            _child_into(w1, x1[c * xs1], m1[c], n_states)
            _child_into(w2, x2[c * xs2], m2[c], n_states)
            for i in range(n_states):
                a, b, r = w1[i], w2[i], d[i]
                for p in range(n_patterns):
                    r[p] = a[p] * b[p]
        if need > 0:
            need = _max_count(d, largest, c == n_cat - 1)
    return need


@numba.njit(**_FMA)
def rescale(dest, scale_row, largest):
    """After a node_update that returned nonzero: patterns whose largest entry is below rescale_below
    are multiplied by the power of two that brings it into [0.5, 1); scale_row holds log(1 / factor)
    (0 elsewhere). Returns whether any pattern was rescaled (else scale_row is all zeros)."""
    n_cat, n_states, n_patterns = dest.shape
    below = rescale_below(dest)
    any_ = False
    for p in range(n_patterns):
        big = largest[p]
        if big >= below or big <= 0.0:
            scale_row[p] = 0.0
            continue
        _m, e = math.frexp(big)
        f = math.ldexp(1.0, -e)
        for c in range(n_cat):
            for i in range(n_states):
                dest[c, i, p] *= f
        scale_row[p] = e * LOG2
        any_ = True
    return any_


@numba.njit(**_FMA)
def root_sites(root, x, xs, m, freqs, cweights, work, site):
    """site[p] = sum_c w_c sum_i f_i root[c, i, p] (P x)[i, p]: the root's partials times its third
    child's branch."""
    n_cat, n_states, n_patterns = root.shape
    site[:] = 0.0
    w1 = work[0]
    for c in range(n_cat):
        r = root[c]
        if n_states == 4:
            _root4(r, x[c * xs], m[c], cweights[c] * freqs[0], cweights[c] * freqs[1], cweights[c] * freqs[2],
                   cweights[c] * freqs[3], site)
            continue
        _child_into(w1, x[c * xs], m[c], n_states)
        for i in range(n_states):
            f = cweights[c] * freqs[i]
            a, b = r[i], w1[i]
            for p in range(n_patterns):
                site[p] += f * a[p] * b[p]


@numba.njit(**_FMA)
def _root4(r, v, a, f0, f1, f2, f3, site):
    """One category of root_sites for four states, fused."""
    r0, r1, r2, r3 = r[0], r[1], r[2], r[3]
    v0, v1, v2, v3 = v[0], v[1], v[2], v[3]
    a00, a01, a02, a03, a10, a11, a12, a13 = a[0, 0], a[0, 1], a[0, 2], a[0, 3], a[1, 0], a[1, 1], a[1, 2], a[1, 3]
    a20, a21, a22, a23, a30, a31, a32, a33 = a[2, 0], a[2, 1], a[2, 2], a[2, 3], a[3, 0], a[3, 1], a[3, 2], a[3, 3]
    for p in range(r.shape[1]):
        y0, y1, y2, y3 = v0[p], v1[p], v2[p], v3[p]
        site[p] += (f0 * r0[p] * (a00 * y0 + a01 * y1 + a02 * y2 + a03 * y3)
                    + f1 * r1[p] * (a10 * y0 + a11 * y1 + a12 * y2 + a13 * y3)
                    + f2 * r2[p] * (a20 * y0 + a21 * y1 + a22 * y2 + a23 * y3)
                    + f3 * r3[p] * (a30 * y0 + a31 * y1 + a32 * y2 + a33 * y3))


@numba.njit(**_FMA)
def site_logs(site, scale_row, inv, pinvar, out):
    """ln L_p from the variable-site likelihood, the log scale and the +I term (inv[p]: sum of the
    frequencies of the states every tip allows at p), the one-pattern-at-a-time reference of
    `weighted_lnl`."""
    for p in range(site.shape[0]):
        out[p] = _site_log(site[p], scale_row[p], inv[p] if pinvar > 0.0 else 0.0, pinvar)


@numba.njit(**_FMA)
def _site_log(x, scale, iv, pinvar):
    """One pattern of site_logs, with libm's log and exp (every case)."""
    log_var = math.log1p(-pinvar) if pinvar > 0.0 else 0.0
    if iv <= 0.0:
        return (math.log(x) if x > 0.0 else -math.inf) + scale + log_var
    if -scale < 600.0:
        return scale + math.log((1.0 - pinvar) * x + pinvar * iv * math.exp(-scale))
    a = (math.log(x) if x > 0.0 else -math.inf) + scale + log_var
    b = math.log(pinvar * iv)
    hi, lo = (a, b) if a > b else (b, a)
    return hi + math.log1p(math.exp(lo - hi))


@numba.njit(**_FMA)
def weighted_lnl(site, scale, scaled, inv, pinvar, weights, work):
    """sum_p weights[p] ln L_p, ln L_p as site_logs (scale: the summed log scales, read only when
    `scaled`). Most patterns take the vectorised log; the rare ones that need more (rescaled with a +I
    term, or a value too small for it) are redone by _site_log."""
    y, out = work[0, 0], work[1, 1]
    n_fix = _log_args(site, scale, scaled, inv, pinvar, y, out)
    _log_pass(y, work[0, 1].view(np.int64), work[1, 0].view(np.int64), out)
    if n_fix > 0:
        for p in range(site.shape[0]):
            sc = scale[p] if scaled else 0.0
            iv = inv[p] if pinvar > 0.0 else 0.0
            if y[p] < TINY or (sc != 0.0 and iv > 0.0):
                out[p] = _site_log(site[p], sc, iv, pinvar)
    return weighted_sum4(weights, out)


@numba.njit(**_FMA)
def _log_args(site, scale, scaled, inv, pinvar, y, out):
    """y[p]: what ln L_p takes the log of, out[p]: what it adds (the log scale); returns how many
    patterns _log_pass cannot do (y below TINY, or a rescaled pattern with a +I term)."""
    q = 1.0 - pinvar
    n = 0
    for p in range(site.shape[0]):
        sc = scale[p] if scaled else 0.0
        iv = inv[p] if pinvar > 0.0 else 0.0
        v = q * site[p] + (pinvar * iv if sc == 0.0 else 0.0)
        y[p] = v
        out[p] = sc
        n += (v < TINY) | ((sc != 0.0) & (iv > 0.0))
    return n


_LG = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01, 2.222219843214978396e-01,
       1.818357216161805012e-01, 1.531383769920937332e-01, 1.479819860511658591e-01)
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_MANT, _ONE, _MAGIC = (1 << 52) - 1, 0x3FF0000000000000, 0x4330000000000000
_BIAS = 2.0 ** 52 + 1023.0


@numba.njit(**_FMA)
def _log_pass(y, mi, ei, out):
    """out[p] += ln y[p] for normal positive y (fdlibm's e_log.c without its special cases: < 1 ulp),
    in two loops the compiler vectorises: the bits of y's mantissa and exponent into mi / ei (as
    doubles: m in [1, 2), 2^52 + biased exponent), then the polynomial."""
    yi = y.view(np.int64)
    for p in range(y.shape[0]):
        b = yi[p]
        mi[p] = (b & _MANT) | _ONE
        ei[p] = (b >> 52) | _MAGIC
    mf, ef = mi.view(np.float64), ei.view(np.float64)
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LG
    for p in range(y.shape[0]):
        m, k = mf[p], ef[p] - _BIAS
        big = m > 1.4142135623730951
        m = 0.5 * m if big else m
        k = k + 1.0 if big else k
        f = m - 1.0
        s = f / (2.0 + f)
        z = s * s
        w = z * z
        r = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7))) + w * (lg2 + w * (lg4 + w * lg6))
        hfsq = 0.5 * f * f
        out[p] += k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


@numba.njit(**JIT_OPTIONS)
def _neumaier(total, comp, x):
    """One step of Neumaier's compensated sum: (new total, new compensation)."""
    s = total + x
    return s, comp + (((total - s) + x) if abs(total) >= abs(x) else ((x - s) + total))


@numba.njit(**JIT_OPTIONS)
def weighted_sum4(weights, values):
    """sum_p weights[p] * values[p], compensated (Neumaier) in four independent lanes (p mod 4), so
    the additions do not wait for each other."""
    n = values.shape[0]
    t0 = t1 = t2 = t3 = c0 = c1 = c2 = c3 = 0.0
    q = n - n % 4
    for p in range(0, q, 4):
        t0, c0 = _neumaier(t0, c0, weights[p] * values[p])
        t1, c1 = _neumaier(t1, c1, weights[p + 1] * values[p + 1])
        t2, c2 = _neumaier(t2, c2, weights[p + 2] * values[p + 2])
        t3, c3 = _neumaier(t3, c3, weights[p + 3] * values[p + 3])
    for p in range(q, n):
        t0, c0 = _neumaier(t0, c0, weights[p] * values[p])
    total, c = _neumaier(t0, c0 + c1 + c2 + c3, t1)
    total, c = _neumaier(total, c, t2)
    total, c = _neumaier(total, c, t3)
    return total + c
