"""Branch-rate prior terms of MrBayes 3.2.7a's relaxed clocks (LogPrior in mcmc.c): independent gamma
rates (igr), Thorne-Kishino 2002 autocorrelated lognormal rates (tk02) and the compound Poisson process
(cpp). Branch lengths are in substitution units (depth differences of mbgpu.clock.rooted); `rates[v]` is
the rate of the branch above node v (igr, cpp multipliers) or of node v (tk02). The hyperpriors (igrvar,
tk02var, cppRate) are ordinary distributions of mbgpu.clock.distributions and are added by the caller.
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.distributions import ln_gamma_pdf, ln_lognormal_pdf
from mbgpu.clock.rooted import branch_lengths, root_of
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def ln_tk02_lognormal(mean: float, var: float, x: float) -> float:
    """LnProbTK02LogNormal: lognormal density of x with mean `mean` and variance `var` of x itself
    (σ² = ln(1 + var/mean²), μ = ln mean - σ²/2)."""
    sigma = math.sqrt(math.log(1.0 + var / (mean * mean)))
    return ln_lognormal_pdf(math.log(mean) - sigma * sigma / 2.0, sigma, x)


@numba.njit(**JIT_OPTIONS)
def ln_igr_rates(parent, depth, rates, igrvar: float) -> float:
    """Σ over branches of positive length of Gamma(shape = rate = l/igrvar) log density of the branch
    rate, l the branch length (substitution units): the IgrBrlens term."""
    root = root_of(parent)
    length = branch_lengths(parent, depth)
    total = 0.0
    for v in range(parent.shape[0]):
        if v != root and length[v] > 0.0:
            total += ln_gamma_pdf(length[v] / igrvar, length[v] / igrvar, rates[v])
    return total


@numba.njit(**JIT_OPTIONS)
def ln_tk02_rates(parent, depth, rates, nu: float) -> float:
    """Σ over branches of positive length of LnProbTK02LogNormal(parent's rate, ν l, node's rate): the
    TK02Brlens term (the root's rate is the chain's, 1 in MrBayes)."""
    root = root_of(parent)
    length = branch_lengths(parent, depth)
    total = 0.0
    for v in range(parent.shape[0]):
        if v != root and length[v] > 0.0:
            total += ln_tk02_lognormal(rates[parent[v]], nu * length[v], rates[v])
    return total


@numba.njit(**JIT_OPTIONS)
def ln_cpp_events(parent, depth, n_events, multipliers, cpp_rate: float, sigma: float) -> float:
    """The CppEvents term: -λ TL + N ln λ + Σ over events of lognormal(0, σ) log density of the rate
    multiplier; TL = tree length in substitution units, N = Σ n_events, `multipliers[v, :n_events[v]]`
    the multipliers on the branch above v; σ = cppmultdev (Fixed(0.4) by default)."""
    length = branch_lengths(parent, depth)
    total = -cpp_rate * length.sum()
    n = 0
    for v in range(parent.shape[0]):
        n += n_events[v]
        for j in range(n_events[v]):
            total += ln_lognormal_pdf(0.0, sigma, multipliers[v, j])
    return total + n * math.log(cpp_rate)
