"""Proposals on model parameters (MrBayes' Dirichlet, Slider and Multiplier moves) and autotuning.

A move proposes a new value for one free parameter and returns the log Hastings ratio; the chain
evaluates priors and likelihoods. Simplex parameters (revmat, statefreqs, rate multipliers as
character-weighted proportions, and kappa as the pair (k/(1+k), 1/(1+k))) are moved on the simplex,
where their priors are defined.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mbgpu.priors import log_dirichlet

MIN_SIMPLEX = 1e-6  # smallest proportion a Dirichlet/Slider move may produce


def reflect(x: float, lo: float, hi: float) -> float:
    """Fold x back into [lo, hi] (repeatedly, for large steps)."""
    width = hi - lo
    while x < lo or x > hi:
        x = 2 * lo - x if x < lo else 2 * hi - x
        if width <= 0:
            return lo
    return x


@dataclass
class ParamMove:
    """One move on one parameter: name as MrBayes prints it, weight, tuning value and counters."""

    name: str
    param: int  # index into the chain's parameter list
    kind: str  # 'dirichlet' | 'slider' | 'multiplier' | 'pinvar_slider'
    weight: float
    tuning: float
    tuning_name: str  # 'alpha' | 'delta' | 'lambda' (.mcmc column suffix)
    target: float = 0.25
    autotune: bool = True
    bounds: tuple[float, float] = (1e-5, 100.0)
    scale: np.ndarray | None = None  # rate multipliers: moved as the proportions scale * m (sum 1)
    # a Dirichlet move draws w' ~ Dirichlet(tuning * alpha_factor * w): MrBayes' alphaPi multiplies the
    # tuning by the number of rates or states for Revmat and Pi (Move_Revmat_Dir, Move_Statefreqs)
    alpha_factor: float = 1.0
    counts: dict = field(default_factory=lambda: {"tried": 0, "accepted": 0, "batch_tried": 0,
                                                  "batch_accepted": 0, "batches": 0})

    def propose(self, value: np.ndarray, rng: np.random.Generator):
        """(new value, log Hastings ratio), or None when the proposal is out of bounds (a rejection)."""
        if self.scale is not None and np.size(value) == 1:
            return lone_multiplier_move(self.kind, float(value[0]), self.tuning * self.alpha_factor, rng)
        if self.scale is not None:   # m -> w = scale m on the simplex and back; the linear map's Jacobian cancels
            out = self._propose(value * self.scale, rng)
            return None if out is None else (out[0] / self.scale, out[1])
        return self._propose(value, rng)

    def _propose(self, value: np.ndarray, rng: np.random.Generator):
        if self.kind == "dirichlet":
            return _dirichlet(value, self.tuning * self.alpha_factor, rng)
        if self.kind == "slider":
            return _simplex_slider(value, self.tuning, rng)
        if self.kind == "multiplier":
            return _multiplier(value, self.tuning, rng, self.bounds)
        if self.kind == "pinvar_slider":
            new = reflect(float(value[0]) + self.tuning * (rng.random() - 0.5), 0.0, 1.0 - 1e-6)
            return np.array([new]), 0.0
        raise AssertionError(self.kind)


def _dirichlet(x: np.ndarray, alpha: float, rng):
    """x' ~ Dirichlet(alpha * x); Hastings = q(x | x') / q(x' | x)."""
    x = x / x.sum()
    new = rng.dirichlet(alpha * x)
    if np.any(new < MIN_SIMPLEX):
        return None
    return new, log_dirichlet(x, alpha * new) - log_dirichlet(new, alpha * x)


def _simplex_slider(x: np.ndarray, delta: float, rng):
    """Move the split of a random pair's sum by a reflected uniform step (symmetric)."""
    x = x / x.sum()
    i, j = rng.choice(x.size, size=2, replace=False)
    total = x[i] + x[j]
    lo = MIN_SIMPLEX / total
    share = reflect(x[i] / total + delta * (rng.random() - 0.5), lo, 1.0 - lo)
    new = x.copy()
    new[i], new[j] = share * total, (1.0 - share) * total
    return new, 0.0


def lone_multiplier_move(kind: str, m: float, tuning: float, rng):
    """MrBayes 3.2.7a's Move_RateMult_Dir/_Slider on a rate multiplier of one division (nRates 1, its
    proportion w = n m / n = m, not normalised). Dirichlet: the one-part draw is 1, so m' = 1, with
    log Hastings (alphaPi - 1) log m. Slider: both picked rates are that one (indexJ = indexI), y =
    1/2 + delta (u - 1/2) reflected into [min, 1 - min], min = DIR_MIN / 2m (delta at most 1 - 2 min),
    and the second write wins: m' = 2 m (1 - y), log Hastings 0. The prior ratios MrBayes adds are
    (alpha - 1) times logs: 0 for the only prior accepted here (ratepr=variable)."""
    if kind == "dirichlet":
        return np.array([1.0]), (tuning - 1.0) * math.log(m)
    lo = MIN_SIMPLEX / (2.0 * m)
    delta = min(tuning, 1.0 - 2.0 * lo)
    y = reflect(0.5 + delta * (rng.random() - 0.5), lo, 1.0 - lo)
    return np.array([2.0 * m * (1.0 - y)]), 0.0


def _multiplier(x: np.ndarray, lam: float, rng, bounds):
    """x' = x exp(lam (u - 1/2)), reflected in log space into bounds; Hastings = log(x'/x)."""
    lo, hi = math.log(bounds[0]), math.log(bounds[1])
    old = math.log(float(x[0]))
    new = reflect(old + lam * (rng.random() - 0.5), lo, hi)
    return np.array([math.exp(new)]), new - old


def record(move, accepted: bool, tunefreq: int, autotune: bool) -> None:
    """Count a try and, every `tunefreq` tries, tune toward the target rate as MrBayes does."""
    c = move.counts
    c["tried"] += 1
    c["batch_tried"] += 1
    if accepted:
        c["accepted"] += 1
        c["batch_accepted"] += 1
    if c["batch_tried"] < tunefreq:
        return
    rate = c["batch_accepted"] / c["batch_tried"]
    c["batches"] += 1
    c["batch_tried"] = c["batch_accepted"] = 0
    c["last_rate"] = rate
    if autotune and getattr(move, "autotune", False) and getattr(move, "target", None) is not None:
        tune(move, rate)


def tune(move, rate: float) -> None:
    """Step size up when accepting above target (Dirichlet: concentration down), by exp(delta)."""
    if hasattr(move, "move"):  # a wrapped tree move tunes itself (mbgpu.moves.base.Move.tune)
        move.move.tune(rate)
        return
    delta = min(0.01, 1.0 / math.sqrt(move.counts["batches"]))
    grow = rate > move.target
    factor = math.exp(delta if grow else -delta)
    if move.tuning_name == "alpha":
        move.tuning /= factor
    else:
        move.tuning *= factor
