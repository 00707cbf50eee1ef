"""Compiled parameter moves: MrBayes' Dirichlet, Slider and Multiplier proposals and their autotuning.

Ports of mbgpu.sampler.param_moves acting on `x`, one parameter's values (a float64 slice of a chain's
parameter vector), IN PLACE. Each returns the log Hastings ratio, or -inf when the proposal is rejected
without evaluation (where the Python move returns None); then `x` is left unchanged. `s` is the chain's
xoshiro state (engine/core/rng.py).

Simplex moves take `scale` (float64[len(x)]): rate multipliers m are moved as the proportions
w = scale m on the simplex and written back as w' / scale (the linear map's Jacobian cancels); pass all
ones for an ordinary simplex parameter (revmat, statefreqs, kappa's pair).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.core.rng import gamma, randint, uniform
from mbgpu.jit import JIT_OPTIONS

MIN_SIMPLEX = 1e-6          # smallest proportion a Dirichlet/Slider move may produce (as the Python)
PINVAR_MAX = 1.0 - 1e-6     # Slider(Pinvar) reflects into [0, 1 - 1e-6]


@numba.njit(**JIT_OPTIONS)
def log_dirichlet_pdf(x, alpha):
    """log Dirichlet(alpha) density at x (float64 arrays of one length)."""
    a_sum = 0.0
    out = 0.0
    for i in range(x.shape[0]):
        a_sum += alpha[i]
        out += (alpha[i] - 1.0) * math.log(x[i]) - math.lgamma(alpha[i])
    return out + math.lgamma(a_sum)


@numba.njit(**JIT_OPTIONS)
def reflect(x, lo, hi):
    """Fold x back into [lo, hi] (repeatedly, for large steps); lo when the interval is empty."""
    width = hi - lo
    while x < lo or x > hi:
        x = 2.0 * lo - x if x < lo else 2.0 * hi - x
        if width <= 0.0:
            return lo
    return x


@numba.njit(**JIT_OPTIONS)
def _log_gamma_draw(s, shape):
    """log of a Gamma(shape, 1) draw, without underflow for tiny shapes (Gamma(shape + 1) u^(1/shape))."""
    if not shape > 0.0:                  # a zero proportion: the draw is 0 (the move is then rejected)
        return -math.inf
    if shape < 1.0:
        return math.log(gamma(s, shape + 1.0)) + math.log(uniform(s)) / shape
    return math.log(gamma(s, shape))


@numba.njit(**JIT_OPTIONS)
def dirichlet_move(s, x, alpha, scale):
    """Dirichlet move: w = scale x / sum, w' ~ Dirichlet(alpha w); rejected (-inf) when any w' < MIN_SIMPLEX.
    log Hastings = log Dir(w | alpha w') - log Dir(w' | alpha w); x <- w' / scale. One value (a rate
    multiplier of one division): MrBayes' one-rate case (mbgpu.sampler.param_moves.lone_multiplier_move)."""
    k = x.shape[0]
    if k == 1:
        log_h = (alpha - 1.0) * math.log(x[0])
        x[0] = 1.0
        return log_h
    total = 0.0
    for i in range(k):
        total += x[i] * scale[i]
    new = np.empty(k)                    # log gamma draws, then w'
    top = -math.inf
    for i in range(k):
        new[i] = _log_gamma_draw(s, alpha * (x[i] * scale[i] / total))
        if new[i] > top:
            top = new[i]
    norm = 0.0
    for i in range(k):
        new[i] = math.exp(new[i] - top)
        norm += new[i]
    for i in range(k):
        new[i] /= norm
        if not new[i] >= MIN_SIMPLEX:
            return -math.inf
    # log Dir(w | alpha w') - log Dir(w' | alpha w)
    sum_fwd = 0.0
    sum_back = 0.0
    log_h = 0.0
    for i in range(k):
        w = x[i] * scale[i] / total
        a_back = alpha * new[i]
        a_fwd = alpha * w
        sum_back += a_back
        sum_fwd += a_fwd
        log_h += (a_back - 1.0) * math.log(w) - math.lgamma(a_back)
        log_h -= (a_fwd - 1.0) * math.log(new[i]) - math.lgamma(a_fwd)
    log_h += math.lgamma(sum_back) - math.lgamma(sum_fwd)
    for i in range(k):
        x[i] = new[i] / scale[i]
    return log_h


@numba.njit(**JIT_OPTIONS)
def lone_slider(s, x, delta):
    """MrBayes' Slider on a rate multiplier of one division (mbgpu.sampler.param_moves.lone_multiplier_move):
    y = 1/2 + delta (u - 1/2) reflected into [lo, 1 - lo], lo = MIN_SIMPLEX / 2m, delta at most
    1 - 2 lo; m' = 2 m (1 - y); symmetric as MrBayes counts it (log Hastings 0)."""
    lo = MIN_SIMPLEX / (2.0 * x[0])
    y = reflect(0.5 + min(delta, 1.0 - 2.0 * lo) * (uniform(s) - 0.5), lo, 1.0 - lo)
    x[0] = 2.0 * x[0] * (1.0 - y)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def simplex_slider(s, x, delta, scale):
    """Slider on the simplex: w = scale x / sum; a uniformly drawn ordered pair (i, j) of distinct
    components keeps its sum t while w_i / t moves by delta (u - 1/2), reflected into
    [MIN_SIMPLEX / t, 1 - MIN_SIMPLEX / t]; symmetric (log Hastings 0). x <- w' / scale. Aborted (-inf)
    when t < 2 MIN_SIMPLEX (only a start value below MIN_SIMPLEX allows it). One value: `lone_slider`."""
    k = x.shape[0]
    if k == 1:
        return lone_slider(s, x, delta)
    total = 0.0
    for m in range(k):
        total += x[m] * scale[m]
    i = randint(s, k)
    j = randint(s, k - 1)
    if j >= i:
        j += 1
    wi = x[i] * scale[i] / total
    wj = x[j] * scale[j] / total
    t = wi + wj
    if not t >= 2.0 * MIN_SIMPLEX:       # no share keeps both at MIN_SIMPLEX (a start value below it)
        return -math.inf
    lo = MIN_SIMPLEX / t
    share = reflect(wi / t + delta * (uniform(s) - 0.5), lo, 1.0 - lo)
    for m in range(k):
        if m != i and m != j:
            x[m] = x[m] * scale[m] / total / scale[m]
    x[i] = share * t / scale[i]
    x[j] = (1.0 - share) * t / scale[j]
    return 0.0


@numba.njit(**JIT_OPTIONS)
def log_multiplier(s, x, lam, lo, hi):
    """Multiplier on x[0]: log x moves by lam (u - 1/2), reflected into [log lo, log hi];
    log Hastings = log(x' / x). Bounds as the caller's ParamMove.bounds ((1e-5, 200) for shape,
    (1e-5, 100) otherwise)."""
    old = math.log(x[0])
    new = reflect(old + lam * (uniform(s) - 0.5), math.log(lo), math.log(hi))
    x[0] = math.exp(new)
    return new - old


@numba.njit(**JIT_OPTIONS)
def pinvar_slider(s, x, delta):
    """Slider(Pinvar): x[0] + delta (u - 1/2), reflected into [0, 1 - 1e-6]; symmetric."""
    x[0] = reflect(x[0] + delta * (uniform(s) - 0.5), 0.0, PINVAR_MAX)
    return 0.0


@numba.njit(**JIT_OPTIONS)
def tune_param(tuning, rate, target, batches, is_alpha):
    """The new tuning value after one batch with acceptance `rate` (`batches` counts this batch, >= 1):
    exp(delta), delta = min(0.01, 1/sqrt(batches)), up when accepting above target (is_alpha, a
    Dirichlet concentration: down). No limits, as mbgpu.sampler.param_moves.tune."""
    delta = min(0.01, 1.0 / math.sqrt(max(batches, 1)))
    factor = math.exp(delta if rate > target else -delta)
    if is_alpha:
        return tuning / factor
    return tuning * factor
