"""Convergence diagnostics computed exactly as MrBayes 3.2.7a computes them (pure numpy).

- `psrf`: MrBayes' PotentialScaleReduction (Gelman-Rubin without splitting runs). MrBayes keeps the
  within-run sum of squares running *across* runs (it never resets it), so run j contributes the
  cumulative sum over runs 0..j divided by (n_j - 1); R^2 = (N/m - 1)/(N/m) + (m + 1)/m * B/W and the
  value reported is sqrt(R^2). We reproduce that, because its numbers are the contract.
- `ess`: MrBayes' EstimatedSampleSize per run: autocovariances gamma_k/(n-k) summed in pairs
  (Geyer's initial positive sequence) up to lag min(n-1, 2000); ESS = n*gamma_0/var.
- `split_stddevs`, `asdsf_msdsf`: standard deviation of split frequencies across runs, sample (n-1)
  convention, over splits whose count reaches ceil(minpartfreq * nsamples) in at least one run.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def mean_variance(values) -> tuple[float, float]:
    """MrBayes' MeanVariance: running mean and the (n-1) sample variance (0 for a single value)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    a, s = 0.0, 0.0
    for i in range(x.size):
        v = float(x[i])
        old = a
        a += (v - a) / (i + 1)
        s += (v - a) * (v - old)
    return a, (s / (x.size - 1) if x.size > 1 else 0.0)


def psrf(samples: Sequence[Sequence[float]]) -> float:
    """PSRF of one parameter from per-run samples (list of 1-D arrays); NaN where MrBayes says NA.

    >>> round(psrf([[1.0, 2.0, 3.0], [1.5, 2.5, 3.5]]), 5)
    0.88976
    """
    runs = [np.asarray(r, dtype=np.float64).ravel() for r in samples]
    m = len(runs)
    if m < 2 or any(r.size == 0 for r in runs):
        return float("nan")
    a_b = s_b = s_w = s_wj = 0.0
    n_vals = 0
    for j, r in enumerate(runs):
        n_vals += r.size
        a_w = float(r[0])
        for i in range(1, r.size):
            v, old = float(r[i]), a_w
            a_w += (v - a_w) / (i + 1)
            s_wj += (v - a_w) * (v - old)
        s_w += s_wj / (r.size - 1) if r.size > 1 else _c_divide_by_zero(s_wj)
        old_b = a_b
        a_b += (a_w - a_b) / (j + 1)
        if j:
            s_b += (a_w - a_b) * (a_w - old_b)
    s_b /= m - 1
    s_w /= m
    weight = n_vals / m
    if not s_w > 0.0:
        return float("nan")
    return math.sqrt((weight - 1.0) / weight + (m + 1) / m * (s_b / s_w))


def _c_divide_by_zero(x: float) -> float:
    """x / 0.0 as C computes it: a run of one sample adds sWj/0 to MrBayes' sum, +inf when an earlier
    run left sWj > 0 (the PSRF then comes out as sqrt((w-1)/w)), NaN (NA) when sWj is 0."""
    return math.copysign(math.inf, x) if x != 0.0 and x == x else float("nan")


def ess(samples: Sequence[float]) -> float:
    """MrBayes' estimated sample size of one run's samples (autocorrelation, paired lags)."""
    x = np.asarray(samples, dtype=np.float64).ravel()
    n = x.size
    mean = float(np.sum(x)) / n if n else float("nan")
    d = x - mean
    max_lag = min(n - 1, 2000)
    gam = np.zeros(max(max_lag, 1))
    var = 0.0
    lag = 0
    while lag < max_lag:
        gam[lag] = float(np.dot(d[: n - lag], d[lag:])) / (n - lag)
        if lag == 0:
            var = gam[0]
        elif lag % 2 == 0:
            if gam[lag - 1] + gam[lag] > 0:
                var += 2.0 * (gam[lag - 1] + gam[lag])
            else:
                max_lag = lag
        lag += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(gam[0] * n) / np.float64(var)) if max_lag > 0 else float("nan")


def ess_per_run(samples: Sequence[Sequence[float]]) -> list[float]:
    """ESS of each run, as sump's min ESS / avg ESS columns use them."""
    return [ess(r) for r in samples]


def min_count(minpartfreq: float, nsamples: int) -> int:
    """Smallest count that reaches `minpartfreq` of `nsamples` (MrBayes rounds the product up)."""
    m = int(minpartfreq * nsamples)
    return m + 1 if float(m) != minpartfreq * nsamples else m


def split_stddevs(counts, nsamples, minpartfreq: float = 0.10) -> np.ndarray:
    """Std dev across runs of each split's frequency, for splits that reach `minpartfreq` in a run.

    counts: int[n_splits, n_runs]; nsamples: int or int[n_runs] (trees per run after burn-in).
    """
    c = np.asarray(counts, dtype=np.float64).reshape(-1, np.shape(counts)[-1] if np.ndim(counts) else 1)
    ns = np.broadcast_to(np.asarray(nsamples, dtype=np.float64), (c.shape[1],))
    need = np.array([min_count(minpartfreq, int(k)) for k in ns])
    keep = np.any(c >= need, axis=1)
    f = c[keep] / ns
    n = c.shape[1]
    s, sq = np.zeros(f.shape[0]), np.zeros(f.shape[0])
    for i in range(n):  # accumulate in MrBayes' order
        s += f[:, i]
        sq += f[:, i] * f[:, i]
    var = (sq - s * s / n) / (n - 1)
    return np.sqrt(np.where(var < 0.0, 0.0, var))


def asdsf_msdsf(counts, nsamples, minpartfreq: float = 0.10) -> tuple[float, float]:
    """Average and maximum standard deviation of split frequencies (NaN when no split qualifies)."""
    sd = split_stddevs(counts, nsamples, minpartfreq)
    if sd.size == 0:
        return float("nan"), 0.0
    total = 0.0
    for v in sd:  # sequential sum like MrBayes
        total += float(v)
    return total / sd.size, float(np.max(sd))
