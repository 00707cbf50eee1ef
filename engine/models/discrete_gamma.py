"""Discrete gamma rate categories computed exactly the way MrBayes 3.2.7a computes them.

MrBayes does not use exact gamma quantiles: it uses the published approximations AS 91 (chi-square
quantile, Best & Roberts 1975, tolerance 0.5e-6), AS 32 (incomplete gamma ratio, Bhattacharjee 1970,
accuracy 1e-8), the Odeh & Evans (1974) normal quantile that seeds AS 91, and Pike & Hill's (1966)
log-gamma (MrBayes' LnGamma: mbgpu.clock.special's, compiled here). Likelihoods under +G differ from the
exact-quantile values by up to ~1e-6, so to match MrBayes to ~1e-10 we reproduce those algorithms here
(written from the published descriptions).
Compiled with numba: a shape proposal rebuilds the rates, and in plain Python this was most of it.

The category rates are the means of K equal-probability categories (Yang 1994):
r_k = K * [I(b_k * alpha; alpha + 1) - I(b_{k-1} * alpha; alpha + 1)], b_k the k/K gamma quantile.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.clock.special import ln_gamma    # MrBayes' LnGamma (compiled there; the one copy)
from mbgpu.jit import JIT_OPTIONS

_TINY = 1e-30



@numba.njit(**JIT_OPTIONS)
def incomplete_gamma(x: float, alpha: float, ln_gamma_alpha: float) -> float:
    """Regularised lower incomplete gamma ratio P(alpha, x), AS 32 (series or continued fraction).

    Returns -1.0 on invalid arguments, as the published routine does.
    """
    accurate, overflow = 1e-8, 1e30
    if abs(x) < _TINY:
        return 0.0
    if x < 0.0 or alpha <= 0.0:
        return -1.0
    factor = math.exp(alpha * math.log(x) - x - ln_gamma_alpha)
    if x > 1.0 and x >= alpha:
        return 1.0 - factor * _gamma_continued_fraction(x, alpha, accurate, overflow)
    gin, term, rn = 1.0, 1.0, alpha
    while True:
        rn += 1.0
        term *= x / rn
        gin += term
        if term <= accurate:
            break
    return gin * factor / alpha


@numba.njit(**JIT_OPTIONS)
def _gamma_continued_fraction(x: float, p: float, accurate: float, overflow: float) -> float:
    """The continued-fraction branch of AS 32 (upper tail), iterated until it settles."""
    a = 1.0 - p
    b = a + x + 1.0
    term = 0.0
    pn = [1.0, x, x + 1.0, x * b, 0.0, 0.0]
    gin = pn[2] / pn[3]
    while True:
        a += 1.0
        b += 2.0
        term += 1.0
        an = a * term
        pn[4] = b * pn[2] - an * pn[0]
        pn[5] = b * pn[3] - an * pn[1]
        if abs(pn[5]) >= _TINY:
            rn = pn[4] / pn[5]
            dif = abs(gin - rn)
            if dif <= accurate and dif <= accurate * rn:
                return gin  # AS 32 returns the previous convergent here, not rn
            gin = rn
        pn[0:4] = pn[2:6]
        if abs(pn[4]) >= overflow:
            pn[0:4] = [v / overflow for v in pn[0:4]]


@numba.njit(**JIT_OPTIONS)
def point_normal(prob: float) -> float:
    """Standard normal quantile by the rational approximation of Odeh & Evans (1974), ~1.5e-8."""
    a0, a1, a2, a3, a4 = (-0.322232431088, -1.0, -0.342242088547, -0.0204231210245,
                          -0.453642210148e-4)
    b0, b1, b2, b3, b4 = (0.0993484626060, 0.588581570495, 0.531103462366, 0.103537752850,
                          0.0038560700634)
    p1 = prob if prob < 0.5 else 1.0 - prob
    if p1 < 1e-20:
        return -9999.0
    y = math.sqrt(math.log(1.0 / (p1 * p1)))
    z = y + ((((y * a4 + a3) * y + a2) * y + a1) * y + a0) / ((((y * b4 + b3) * y + b2) * y + b1) * y + b0)
    return -z if prob < 0.5 else z


@numba.njit(**JIT_OPTIONS)
def point_chi2(prob: float, v: float) -> float:
    """Chi-square quantile with v degrees of freedom, AS 91 (Best & Roberts 1975), tolerance 0.5e-6."""
    e, aa = 0.5e-6, 0.6931471805
    if prob < 0.000002 or prob > 0.999998 or v <= 0.0:
        return -1.0
    g = ln_gamma(v / 2.0)
    xx = v / 2.0
    c = xx - 1.0
    if v < -1.24 * math.log(prob):
        ch = (prob * xx * math.exp(g + xx * aa)) ** (1.0 / xx)
        if ch - e < 0.0:
            return ch
    elif v <= 0.32:
        ch = _chi2_small_df_start(prob, v, g, c, aa)
    else:
        x = point_normal(prob)
        p1 = 0.222222 / v
        ch = v * (x * math.sqrt(p1) + 1.0 - p1) ** 3
        if ch > 2.2 * v + 6.0:
            ch = -2.0 * (math.log(1.0 - prob) - c * math.log(0.5 * ch) + g)
    return _chi2_refine(ch, prob, xx, c, g, aa, e)


@numba.njit(**JIT_OPTIONS)
def _chi2_small_df_start(prob: float, v: float, g: float, c: float, aa: float) -> float:
    """AS 91 starting value for small degrees of freedom (v <= 0.32) by Newton steps."""
    ch = 0.4
    a = math.log(1.0 - prob)
    while True:
        q = ch
        p1 = 1.0 + ch * (4.67 + ch)
        p2 = ch * (6.73 + ch * (6.66 + ch))
        t = -0.5 + (4.67 + 2.0 * ch) / p1 - (6.73 + ch * (13.32 + 3.0 * ch)) / p2
        ch -= (1.0 - math.exp(a + g + 0.5 * ch + c * aa) * p2 / p1) / t
        if abs(q / ch - 1.0) - 0.01 <= 0.0:
            return ch


@numba.njit(**JIT_OPTIONS)
def _chi2_refine(ch: float, prob: float, xx: float, c: float, g: float, aa: float, e: float) -> float:
    """AS 91 seventh-order Taylor refinement of the chi-square quantile until |q/ch - 1| <= e."""
    while True:
        q = ch
        p1 = 0.5 * ch
        t = incomplete_gamma(p1, xx, g)
        if t < 0.0:
            raise ArithmeticError("incomplete gamma failed in point_chi2")
        p2 = prob - t
        t = p2 * math.exp(xx * aa + g + p1 - c * math.log(ch))
        b = t / ch
        a = 0.5 * t - b * c
        s1 = (210.0 + a * (140.0 + a * (105.0 + a * (84.0 + a * (70.0 + 60.0 * a))))) / 420.0
        s2 = (420.0 + a * (735.0 + a * (966.0 + a * (1141.0 + 1278.0 * a)))) / 2520.0
        s3 = (210.0 + a * (462.0 + a * (707.0 + 932.0 * a))) / 2520.0
        s4 = (252.0 + a * (672.0 + 1182.0 * a) + c * (294.0 + a * (889.0 + 1740.0 * a))) / 5040.0
        s5 = (84.0 + 264.0 * a + c * (175.0 + 606.0 * a)) / 2520.0
        s6 = (120.0 + c * (346.0 + 127.0 * c)) / 5040.0
        ch += t * (1 + 0.5 * t * s1 - b * c * (s1 - b * (s2 - b * (s3 - b * (s4 - b * (s5 - b * s6))))))
        if abs(q / ch - 1.0) <= e:
            return ch


@numba.njit(**JIT_OPTIONS)
def point_gamma(prob: float, alpha: float, beta: float) -> float:
    """Gamma(alpha, rate beta) quantile via the chi-square quantile with 2*alpha d.f."""
    return point_chi2(prob, 2.0 * alpha) / (2.0 * beta)


def discrete_gamma(alpha: float, k: int) -> np.ndarray:
    """Mean rates of k equal-probability categories of Gamma(alpha, alpha), as MrBayes computes them.

    >>> [round(r, 6) for r in discrete_gamma(0.5, 4)]
    [0.033388, 0.251916, 0.820268, 2.894428]
    """
    if k < 1:
        raise ValueError("number of gamma categories must be >= 1, got %r" % (k,))
    if not alpha > 0.0:
        raise ValueError("gamma shape must be > 0, got %r" % (alpha,))
    return _discrete_gamma(float(alpha), int(k))


@numba.njit(**JIT_OPTIONS)
def _discrete_gamma(alpha, k):
    if k == 1:
        return np.ones(1)
    beta = alpha
    factor = alpha / beta * k
    lnga1 = ln_gamma(alpha + 1.0)
    cum = np.empty(k)
    for i in range(k - 1):
        cum[i] = incomplete_gamma(point_gamma((i + 1.0) / k, alpha, beta) * beta, alpha + 1.0, lnga1)
    cum[k - 1] = 1.0
    rates = np.empty(k)
    rates[0] = cum[0] * factor
    for i in range(1, k):
        rates[i] = (cum[i] - cum[i - 1]) * factor
    return rates
