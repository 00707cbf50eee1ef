"""ParsSPR's randomly perturbed pattern weights (MrBayes): each site of a pattern adds +1 with
probability r and -1 with probability r, independently.

A pattern of c sites (c = ceil(weight)) thus moves by the sum of c such steps. For c <= SMALL that sum
is drawn with ONE uniform per pattern from its exact distribution (an inverse-CDF table per c); larger
patterns draw up ~ Bin(c, r) and down ~ Bin(c - up, r / (1 - r)). The grouping of patterns by c is
planned once per weight vector (`WeightNoise`), so a proposal costs one uniform draw and two comparisons
per pattern (into work arrays kept between draws) and a table search per pattern of c > 1.
"""
from __future__ import annotations

import numpy as np

SMALL = 8


def step_cdf(c: int, r: float) -> np.ndarray:
    """CDF of the sum of c independent steps (+1 w.p. r, -1 w.p. r, 0 otherwise), at -c..c."""
    pmf = np.array([1.0])
    for _ in range(c):
        pmf = np.convolve(pmf, [r, 1.0 - 2.0 * r, r])
    return np.cumsum(pmf)


class WeightNoise:
    """The perturbation plan of one weight vector at one r; `draw(rng)` gives perturbed weights."""

    def __init__(self, weights: np.ndarray, r: float):
        self.weights = np.asarray(weights, dtype=np.float64)
        self.r = float(r)
        count = np.maximum(np.ceil(self.weights - 1e-9), 0).astype(np.int64)
        self.count = count
        self.small = 0.0 < r < 0.5
        self.groups = [(idx, step_cdf(c, self.r)[:-1], c) for c in range(2, SMALL + 1)
                       for idx in [np.flatnonzero(count == c)] if idx.size] if self.small else []
        self.empty = np.flatnonzero(count == 0)
        self.many = np.flatnonzero(count > (SMALL if self.small else 0))
        self._buffers = None
        base = self.weights.astype(np.int64)
        whole = bool(self.weights.size) and np.array_equal(base, self.weights) and base.min() >= 0
        self.integer_base = base if whole and base.max() < 2 ** 40 else None

    def steps(self, rng: np.random.Generator) -> np.ndarray:
        """int64 per-pattern change of one draw."""
        if self.r <= 0.0:
            return np.zeros(self.weights.size, dtype=np.int64)
        if self.small:                         # one uniform per pattern; every pattern as if c = 1 first
            u, low, high = self._scratch()
            rng.random(out=u)
            np.less(u, self.r, out=low)
            np.greater_equal(u, 1.0 - self.r, out=high)
            step = np.subtract(high, low, dtype=np.int64)
            for idx, edges, c in self.groups:  # then c = 2..SMALL: how many CDF values are <= u, less c
                step[idx] = edges.searchsorted(u[idx], side="right") - c
            step[self.empty] = 0
        else:
            step = np.zeros(self.weights.size, dtype=np.int64)
        if self.many.size:
            c, p = self.count[self.many], min(self.r, 1.0)
            up = rng.binomial(c, p)
            step[self.many] = up - rng.binomial(c - up, min(p / (1.0 - p), 1.0) if p < 1.0 else 1.0)
        return step

    def _scratch(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-pattern work arrays kept between draws (fresh ones of this size would each be a new
        memory mapping, costing more page faults than the arithmetic)."""
        if self._buffers is None:
            n = self.weights.size
            self._buffers = (np.empty(n), np.empty(n, dtype=bool), np.empty(n, dtype=bool))
        return self._buffers

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """float64 perturbed weights."""
        return self.weights + self.steps(rng)

    def draw_integer(self, rng: np.random.Generator) -> np.ndarray | None:
        """int64 perturbed weights when every weight is a non-negative integer (never below 0 then:
        a pattern loses at most its c sites); None otherwise."""
        if self.integer_base is None:
            return None
        step = self.steps(rng)
        return np.add(step, self.integer_base, out=step)


def perturbed_weights(weights: np.ndarray, r: float, rng: np.random.Generator) -> np.ndarray:
    """One draw of perturbed weights (plans afresh; ParsSPR keeps a WeightNoise per pattern set)."""
    return WeightNoise(weights, r).draw(rng)
