"""MrBayes 3.2.7a's own special functions (utils.c), reproduced so clock priors match it digit for digit.

MrBayes' LnGamma is Pike & Hill's series (10 decimals), not the C library's lgamma; LnFactorial sums logs.
Compiled (numba). This is the project's one LnGamma: mbgpu.models.discrete_gamma calls it for the +G rates
rather than keeping a copy.
"""
from __future__ import annotations

import math

import numba

from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def ln_gamma(alp: float) -> float:
    """log Gamma(alp) as MrBayes' LnGamma computes it (shift to >= 7, then Stirling's series)."""
    x = alp
    f = 0.0
    if x < 7.0:
        f = 1.0
        z = x - 1.0
        z += 1.0          # MrBayes' `z = x-1.0; while (++z < 7.0)`: (x-1)+1 rounds for x < 0.5, so keep it
        while z < 7.0:
            f *= z
            z += 1.0
        x = z
        f = -math.log(f)
    z = 1.0 / (x * x)
    return (f + (x - 0.5) * math.log(x) - x + 0.918938533204673
            + (((-0.000595238095238 * z + 0.000793650793651) * z - 0.002777777777778) * z
               + 0.083333333333333) / x)


@numba.njit(**JIT_OPTIONS)
def ln_factorial(n: int) -> float:
    """log n! as MrBayes' LnFactorial: the sum of log i for i = 2..n (0 for n < 2)."""
    result = 0.0
    for i in range(2, n + 1):
        result += math.log(i)
    return result


@numba.njit(**JIT_OPTIONS)
def cdf_normal(z: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))
