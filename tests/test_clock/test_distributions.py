"""mbgpu.clock.distributions and special: MrBayes' parameterizations against scipy's densities (an
independent implementation), MrBayes' own LnGamma / LnFactorial, and the echoed text."""
from __future__ import annotations

import math

import pytest
from scipy import stats

from mbgpu.clock.distributions import NEG_INFINITY, age_distribution, clock_rate_distribution
from mbgpu.clock.special import ln_factorial, ln_gamma


def _lognormal_of(mean, sd):
    s2 = math.log(1 + sd * sd / (mean * mean))
    return stats.lognorm(math.sqrt(s2), scale=math.exp(math.log(mean) - s2 / 2))


AGE = [
    ("uniform", (0.15, 0.25), stats.uniform(0.15, 0.1)),
    ("offsetexponential", (0.1, 0.2), stats.expon(0.1, 0.1)),
    ("truncatednormal", (0.1, 0.2, 0.05), stats.truncnorm((0.1 - 0.2) / 0.05, math.inf, 0.2, 0.05)),
    ("lognormal", (0.2, 0.05), _lognormal_of(0.2, 0.05)),
    ("offsetlognormal", (0.1, 0.2, 0.05), _lognormal_of(0.1, 0.05)),      # age - 0.1 has mean 0.1
    ("gamma", (0.2, 0.05), stats.gamma(16, scale=0.05 ** 2 / 0.2)),        # mean 0.2, sd 0.05
    ("offsetgamma", (0.1, 0.2, 0.05), stats.gamma(4, scale=0.05 ** 2 / 0.1)),
]
RATE = [
    ("lognormal", (-1, 0.5), stats.lognorm(0.5, scale=math.exp(-1))),
    ("exponential", (2,), stats.expon(scale=0.5)),
    ("gamma", (2, 4), stats.gamma(2, scale=0.25)),
    ("normal", (1, 0.5), stats.truncnorm(-2, math.inf, 1, 0.5)),
]


@pytest.mark.parametrize("family, params, ref", AGE, ids=[a[0] for a in AGE])
def test_age_distributions_are_the_natural_scale_families(family, params, ref):
    """Calibrations / treeagepr: mean and sd on the natural scale, offsets as minimum ages."""
    dist = age_distribution(family, params)
    for x in (0.16, 0.18, 0.24):
        shift = params[0] if family.startswith("offset") else 0.0
        want = ref.logpdf(x - shift) if family in ("offsetlognormal", "offsetgamma") else ref.logpdf(x)
        assert dist.ln_pdf(x) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("family, params, ref", RATE, ids=[r[0] for r in RATE])
def test_clock_rate_distributions_are_log_space_and_shape_rate(family, params, ref):
    """clockratepr: lognormal(mu, sigma) of log rate, gamma(shape, rate), normal truncated at 0."""
    dist = clock_rate_distribution(family, params)
    for x in (0.3, 1.0, 1.7):
        assert dist.ln_pdf(x) == pytest.approx(ref.logpdf(x), abs=1e-9)


def test_fixed_is_zero_at_its_value_and_mrbayes_neg_infinity_elsewhere():
    dist = age_distribution("fixed", (0.18,))
    assert dist.ln_pdf(0.18) == 0.0 and dist.ln_pdf(0.18 * (1 + 2e-6)) == 0.0
    assert dist.ln_pdf(0.2) == NEG_INFINITY


def test_mrbayes_ln_gamma_and_factorial():
    """LnGamma is Pike & Hill's series (10 decimals of lgamma); LnFactorial sums logs."""
    for x in (0.05, 0.5, 1.0, 3.7, 16.0, 250.0):
        assert ln_gamma(x) == pytest.approx(math.lgamma(x), abs=1e-9)
    assert [ln_factorial(n) for n in (-1, 0, 1)] == [0.0, 0.0, 0.0]
    assert ln_factorial(12) == pytest.approx(math.log(479001600), abs=1e-12)


def test_texts_and_errors():
    assert age_distribution("Offsetgamma", (0.1, 0.2, 0.05)).text() == "Offsetgamma(0.10,0.20,0.05)"
    assert clock_rate_distribution("normal", (1, 0.5)).text() == "Normal(1.000000,0.500000)"
    assert age_distribution("uniform", (0.15, 0.25)).min == 0.15 and age_distribution("gamma", (1, 1)).min == 0.0
    with pytest.raises(ValueError, match="not a distribution"):
        age_distribution("exponential", (1,))             # treeagepr=exponential is MrBayes' error
    with pytest.raises(ValueError, match="takes 3 parameters"):
        age_distribution("offsetgamma", (0.1, 0.2))
