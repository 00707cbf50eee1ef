"""Heat assignment and swaps in MC3: heats (not states) are exchanged between chain positions.

heat(rank) = 1 / (1 + temp * rank); rank 0 is the cold chain. The pair to try is drawn from the
swap stream (seeded by swapseed), which every process draws identically.
"""
from __future__ import annotations

import math

import numpy as np


def heat(rank: int, temp: float) -> float:
    return 1.0 / (1.0 + temp * rank)


class SwapTable:
    """Attempted/accepted swaps between heat ranks i < j (MrBayes' chain IDs), for one run."""

    def __init__(self, nchains: int):
        self.tried = [[0] * nchains for _ in range(nchains)]
        self.accepted = [[0] * nchains for _ in range(nchains)]


def draw_pair(rng: np.random.Generator, nchains: int) -> tuple[int, int]:
    """Two different chain positions, uniformly among all pairs (from two uniforms: Generator.integers
    costs ~8 us a call, a good part of a generation's host time)."""
    a = min(int(rng.random() * nchains), nchains - 1)
    b = min(int(rng.random() * (nchains - 1)), nchains - 2)
    return a, b + (b >= a)


def try_swap(chains, ranks: list[int], temp: float, rng, table: SwapTable) -> bool:
    """One heat swap between two positions of a run; updates `ranks` (position -> heat rank)."""
    a, b = draw_pair(rng, len(chains))
    ha, hb = heat(ranks[a], temp), heat(ranks[b], temp)
    pa = chains[a].lnl + chains[a].lnpr
    pb = chains[b].lnl + chains[b].lnpr
    log_r = (hb - ha) * (pa - pb)
    u = rng.random()
    accepted = log_r >= 0 or math.log(u) < log_r
    i, j = sorted((ranks[a], ranks[b]))
    table.tried[j][i] += 1
    table.tried[i][j] += 1
    if accepted:
        table.accepted[i][j] += 1
        ranks[a], ranks[b] = ranks[b], ranks[a]
    return accepted
