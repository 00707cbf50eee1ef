"""The distributions of `calibrate`, `prset treeagepr` and `prset clockratepr` as MrBayes 3.2.7a
parameterizes them, their log densities (utils.c's LnPriorProb* functions) and the text MrBayes echoes.

Calibrations and the tree-age prior share one family of parameterizations (mean/sd on the natural
scale: `lognormal(0.2,0.05)` has mean 0.2); the clock-rate prior has its own (`lognormal(mu,sigma)` in
log space, `gamma(shape,rate)`, `normal` truncated at 0). `ln_density(kind, p0, p1, p2, x)` is one scalar
function of an integer kind so compiled code can evaluate any of them from arrays.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba

from mbgpu.clock.special import cdf_normal, ln_gamma
from mbgpu.jit import JIT_OPTIONS

NEG_INFINITY = -1000000.0               # MrBayes' NEG_INFINITY (bayes.h): a fixed value missed

# kinds: one per MrBayes LnPriorProb* function
FIXED = 0                  # LnPriorProbFix
UNIFORM = 1                # LnPriorProbUniform (min, max)
EXPONENTIAL = 2            # LnPriorProbExponential (rate)
GAMMA_SHAPE_RATE = 3       # LnPriorProbGamma (shape, rate)
GAMMA_MEAN_SD = 4          # LnPriorProbGamma_Param_Mean_Sd
LOGNORMAL_LOG = 5          # LnPriorProbLognormal (mu, sigma of log x)
LOGNORMAL_MEAN_SD = 6      # LnPriorProbLognormal_Param_Mean_Sd
NORMAL_POSITIVE = 7        # LnPriorProbTruncatedNormal (mean, sd; truncated at 0)
TRUNCNORMAL_MIN_MEAN_SD = 8   # LnPriorProbTruncatedNormal_Param_Trunc_Mean_Sd
OFFSETEXP_MIN_MEAN = 9     # LnPriorProbOffsetExponential_Param_Offset_Mean
OFFSETLOGNORMAL_MIN_MEAN_SD = 10  # LnPriorProbOffsetLognormal_Param_Offset_Mean_Sd
OFFSETGAMMA_MIN_MEAN_SD = 11      # LnPriorProbOffsetGamma_Param_Offset_Mean_Sd

_HALF_LN_2PI_ARG = math.sqrt(2.0 * math.pi)


@numba.njit(**JIT_OPTIONS)
def ln_density(kind: int, p0: float, p1: float, p2: float, x: float) -> float:
    """log density of x under the distribution `kind` with parameters (p0, p1, p2), as MrBayes computes
    it (no range checks: MrBayes' moves keep values inside; `uniform` is -log(max - min) anywhere)."""
    if kind == FIXED:
        return 0.0 if abs((x - p0) / x) < 1e-5 else NEG_INFINITY
    if kind == UNIFORM:
        return -math.log(p1 - p0)
    if kind == EXPONENTIAL:
        return math.log(p0) - p0 * x
    if kind == GAMMA_SHAPE_RATE:
        return ln_gamma_pdf(p0, p1, x)
    if kind == GAMMA_MEAN_SD:
        beta = p0 / (p1 * p1)
        return ln_gamma_pdf(p0 * beta, beta, x)
    if kind == LOGNORMAL_LOG:
        return ln_lognormal_pdf(p0, p1, x)
    if kind == LOGNORMAL_MEAN_SD:
        return _ln_lognormal_mean_sd(p0, p1, x)
    if kind == NORMAL_POSITIVE:
        z = (x - p0) / p1
        return -math.log(p1 * _HALF_LN_2PI_ARG) - z * z / 2.0 - math.log(1.0 - cdf_normal(-p0 / p1))
    if kind == TRUNCNORMAL_MIN_MEAN_SD:
        z = (x - p1) / p2
        return -math.log(p2 * _HALF_LN_2PI_ARG) - z * z / 2.0 - math.log(1.0 - cdf_normal((p0 - p1) / p2))
    if kind == OFFSETEXP_MIN_MEAN:
        rate = 1.0 / (p1 - p0)
        return math.log(rate) - rate * (x - p0)
    if kind == OFFSETLOGNORMAL_MIN_MEAN_SD:
        return _ln_lognormal_mean_sd(p1 - p0, p2, x - p0)
    if kind == OFFSETGAMMA_MIN_MEAN_SD:
        mean = p1 - p0
        beta = mean / (p2 * p2)
        return ln_gamma_pdf(mean * beta, beta, x - p0)
    raise ValueError("unknown distribution kind")


@numba.njit(**JIT_OPTIONS)
def ln_gamma_pdf(alpha: float, beta: float, x: float) -> float:
    """Gamma(shape alpha, rate beta) log density with MrBayes' LnGamma (LnProbGamma)."""
    return (alpha - 1.0) * math.log(x) + alpha * math.log(beta) - beta * x - ln_gamma(alpha)


@numba.njit(**JIT_OPTIONS)
def ln_lognormal_pdf(mu: float, sigma: float, x: float) -> float:
    """Lognormal log density, (mu, sigma) of log x (LnProbLogNormal)."""
    z = (math.log(x) - mu) / sigma
    return -math.log(sigma * x * _HALF_LN_2PI_ARG) - z * z / 2.0


@numba.njit(**JIT_OPTIONS)
def _ln_lognormal_mean_sd(mean: float, sd: float, x: float) -> float:
    """Lognormal log density of mean and sd on the natural scale (MrBayes' `_Param_Mean_Sd`)."""
    sd_log = math.sqrt(math.log((sd * sd) / (mean * mean) + 1.0))
    return ln_lognormal_pdf(math.log(mean) - sd_log * sd_log / 2.0, sd_log, x)


@dataclass(frozen=True)
class Distribution:
    """One prior as MrBayes names it (`family`, capitalised as it echoes it), its parameters as the user
    gave them and the kernel `kind` that evaluates it."""

    family: str
    params: tuple
    kind: int
    digits: int = 2                     # MrBayes echoes %1.2lf, %lf (6) for clockratepr normal/fixed

    def ln_pdf(self, x: float) -> float:
        """log density at x (MrBayes' LnPriorProb of this prior)."""
        p = tuple(self.params) + (0.0,) * (3 - len(self.params))
        return ln_density(self.kind, p[0], p[1], p[2], x)

    def text(self) -> str:
        """The distribution as MrBayes prints it, e.g. `Lognormal(0.20,0.05)`."""
        return "%s(%s)" % (self.family, ",".join("%.*f" % (self.digits, v) for v in self.params))

    @property
    def min(self) -> float:
        """The smallest value with positive density (0 where unbounded below), MrBayes' calibration min."""
        if self.kind == FIXED or self.family.startswith("Offset") or self.kind in (UNIFORM, TRUNCNORMAL_MIN_MEAN_SD):
            return float(self.params[0])
        return 0.0

    @property
    def max(self) -> float:
        """The largest value with positive density (inf where unbounded above)."""
        if self.kind == FIXED:
            return float(self.params[0])
        return float(self.params[1]) if self.kind == UNIFORM else math.inf


# family -> (kind, number of parameters) for calibrations and treeagepr (mean/sd parameterizations)
_AGE_FAMILIES = {
    "fixed": (FIXED, 1), "uniform": (UNIFORM, 2), "offsetexponential": (OFFSETEXP_MIN_MEAN, 2),
    "truncatednormal": (TRUNCNORMAL_MIN_MEAN_SD, 3), "lognormal": (LOGNORMAL_MEAN_SD, 2),
    "offsetlognormal": (OFFSETLOGNORMAL_MIN_MEAN_SD, 3), "gamma": (GAMMA_MEAN_SD, 2),
    "offsetgamma": (OFFSETGAMMA_MIN_MEAN_SD, 3),
}
# clockratepr: log-space lognormal, shape/rate gamma, normal truncated at 0
_RATE_FAMILIES = {
    "fixed": (FIXED, 1), "lognormal": (LOGNORMAL_LOG, 2), "exponential": (EXPONENTIAL, 1),
    "normal": (NORMAL_POSITIVE, 2), "gamma": (GAMMA_SHAPE_RATE, 2),
}


def age_distribution(family: str, params) -> Distribution:
    """A calibration (`calibrate NODE=family(...)`) or tree-age prior (`prset treeagepr=`) distribution.
    Raises ValueError for a family MrBayes does not take there or a wrong number of parameters."""
    return _make(_AGE_FAMILIES, family, params, 2)


def clock_rate_distribution(family: str, params) -> Distribution:
    """A `prset clockratepr=` distribution (lognormal in log space, gamma shape/rate, normal truncated
    at 0). MrBayes echoes normal and fixed with 6 decimals, the others with 2."""
    key = family.lower()
    return _make(_RATE_FAMILIES, family, params, 6 if key in ("normal", "fixed") else 2)


def _make(table: dict, family: str, params, digits: int) -> Distribution:
    key = family.lower()
    if key not in table:
        raise ValueError("%s is not a distribution here (one of %s)" % (family, ", ".join(table)))
    kind, n = table[key]
    params = tuple(float(v) for v in params)
    if len(params) != n:
        raise ValueError("%s takes %d parameters, not %d" % (key, n, len(params)))
    return Distribution(key.capitalize(), params, kind, digits)


def calibration_message(node: str, dist: Distribution, taxon: bool = False) -> str:
    """The line MrBayes prints for `calibrate` (without its indentation), e.g.
    `Setting age of constraint node 'apes' to Lognormal(0.20,0.05)`."""
    return "Setting age of %s '%s' to %s" % ("taxon" if taxon else "constraint node", node, dist.text())
