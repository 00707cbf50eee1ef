"""Random numbers as data: one xoshiro256** state (uint64[4]) per chain, advanced in compiled code.

A chain's draws depend only on its own state, so results are the same for any number of ranks or
threads, and a checkpoint stores the states as a plain (chains, 4) uint64 array. States are seeded
from numpy's SeedSequence(seed, spawn_key=(run, chain)) (never all zero).

Every function takes the state row `s` (uint64[4], changed in place). `uniform` lies in the open
interval (0, 1), as MrBayes' RandomNumber, so log(u) and 1/u are always finite.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS

_U53 = 1.0 / 9007199254740992.0          # 2**-53


def seed_states(seed: int, keys) -> np.ndarray:
    """(len(keys), 4) uint64 states, row k seeded from SeedSequence(seed, spawn_key=keys[k])."""
    out = np.empty((len(keys), 4), dtype=np.uint64)
    for k, key in enumerate(keys):
        row = np.random.SeedSequence(seed, spawn_key=tuple(key)).generate_state(4, np.uint64)
        if not row.any():
            row[0] = 1
        out[k] = row
    return out


@numba.njit(**JIT_OPTIONS)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@numba.njit(**JIT_OPTIONS)
def next_u64(s):
    """The next 64 random bits (xoshiro256**, Blackman and Vigna 2018)."""
    result = _rotl(s[1] * np.uint64(5), 7) * np.uint64(9)
    t = s[1] << np.uint64(17)
    s[2] ^= s[0]
    s[3] ^= s[1]
    s[1] ^= s[2]
    s[0] ^= s[3]
    s[2] ^= t
    s[3] = _rotl(s[3], 45)
    return result


@numba.njit(**JIT_OPTIONS)
def uniform(s):
    """A uniform double in (0, 1): 53 random bits, centred in their interval."""
    return (float(next_u64(s) >> np.uint64(11)) + 0.5) * _U53


@numba.njit(**JIT_OPTIONS)
def randint(s, n):
    """A uniform integer in [0, n) (n >= 1)."""
    k = int(uniform(s) * n)
    return k if k < n else n - 1


@numba.njit(**JIT_OPTIONS)
def exponential(s, rate):
    """An exponential draw with the given rate."""
    return -math.log(uniform(s)) / rate


@numba.njit(**JIT_OPTIONS)
def normal(s):
    """A standard normal draw (Box-Muller, one value per call)."""
    return math.sqrt(-2.0 * math.log(uniform(s))) * math.cos(2.0 * math.pi * uniform(s))


@numba.njit(**JIT_OPTIONS)
def gamma(s, shape):
    """A Gamma(shape, 1) draw (Marsaglia and Tsang 2000; shape < 1 through Gamma(shape + 1) u^(1/shape))."""
    boost = 1.0
    if shape < 1.0:
        boost = uniform(s) ** (1.0 / shape)
        shape += 1.0
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(s)
        if u < 1.0 - 0.0331 * x * x * x * x or math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v * boost


@numba.njit(**JIT_OPTIONS)
def dirichlet(s, alpha, out):
    """out ~ Dirichlet(alpha) (normalised gamma draws)."""
    total = 0.0
    for i in range(alpha.shape[0]):
        out[i] = gamma(s, alpha[i])
        total += out[i]
    for i in range(alpha.shape[0]):
        out[i] /= total


@numba.njit(**JIT_OPTIONS)
def pick(s, cdf):
    """An index drawn with probabilities given by an increasing cumulative table ending at 1."""
    u = uniform(s)
    lo, hi = 0, cdf.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if u < cdf[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo
