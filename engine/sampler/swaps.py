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


def try_swap(chains, ranks: list[int], temp: float, rng, table: SwapTable, power: float = 1.0) -> bool:
    """One heat swap between two positions of a run; updates `ranks` (position -> heat rank). `power`:
    the likelihood's power (a stepping-stone step's; 1.0 in mcmc), as MrBayes' AttemptSwap."""
    return swap_with(chains, ranks, temp, rng.random(3).tolist(), table, power) is not None


def swap_with(chains, ranks: list[int], temp: float, draws, table: SwapTable, power: float = 1.0,
              reweight=None):
    """try_swap with its three uniforms given (draw_pair's two, then the acceptance draw): a caller
    draws every swap of a generation at once (the same values, in the same order, as one at a time).
    Returns the two positions when the swap was accepted (their chains then trade the statistics that go
    with a heat: Chain.trade_heat_stats), else None. `reweight` (mbgpu.sampler.reweight.Reweighting):
    the heat ranks' data differ, and each chain's state is also scored on the other's (AttemptSwap)."""
    n = len(chains)
    a = min(int(draws[0] * n), n - 1)
    b = min(int(draws[1] * (n - 1)), n - 2)
    b += b >= a
    ra, rb = ranks[a], ranks[b]
    ca, cb = chains[a], chains[b]
    ha, hb = heat(ra, temp), heat(rb, temp)
    if reweight is None:
        log_r = (hb - ha) * ((power * ca.lnl + ca.lnpr) - (power * cb.lnl + cb.lnpr))
    else:
        a_on_b, b_on_a = reweight.lnl_on(ca, rb), reweight.lnl_on(cb, ra)
        log_r = (hb * (power * a_on_b + ca.lnpr) + ha * (power * b_on_a + cb.lnpr)
                 - ha * (power * ca.lnl + ca.lnpr) - hb * (power * cb.lnl + cb.lnpr))
    accepted = log_r >= 0 or math.log(draws[2]) < log_r
    i, j = (ra, rb) if ra < rb else (rb, ra)
    table.tried[j][i] += 1
    table.tried[i][j] += 1
    if accepted:
        table.accepted[i][j] += 1
        ranks[a], ranks[b] = ranks[b], ranks[a]
        if reweight is not None:
            ca.lnl, cb.lnl = a_on_b, b_on_a
            reweight.take_rank(ca, rb)
            reweight.take_rank(cb, ra)
        return a, b
    return None
