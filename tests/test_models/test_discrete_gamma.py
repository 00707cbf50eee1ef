"""Discrete gamma as MrBayes computes it (AS 91 / AS 32 / Odeh-Evans / Pike-Hill ports)."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special, stats

from mbgpu.models.discrete_gamma import (discrete_gamma, incomplete_gamma, ln_gamma, point_chi2,
                                          point_normal)


def exact_discrete_gamma(alpha, k):
    """Category means with exact quantiles (scipy), for comparison at the approximation's accuracy."""
    q = stats.gamma.ppf(np.arange(1, k) / k, alpha, scale=1.0 / alpha)
    cum = np.append(special.gammainc(alpha + 1.0, q * alpha), 1.0)
    return np.diff(np.concatenate([[0.0], cum])) * k


def test_yang_1994_alpha_half_four_categories():
    # Yang (1994) J. Mol. Evol. 39:306, Table 1 (alpha = 0.5, K = 4, category means)
    assert discrete_gamma(0.5, 4) == pytest.approx([0.0334, 0.2519, 0.8203, 2.8944], abs=5e-5)


def test_known_values_to_full_precision():
    # pinned values of this implementation; with them the +G oracle lnLs match MrBayes to <= 1e-10
    r = discrete_gamma(0.5, 4)
    assert r == pytest.approx([0.03338775338361239, 0.2519159176270096, 0.8202684819537311, 2.894427847035647], abs=1e-13)
    # the exact-quantile values differ in the 9th decimal: MrBayes' approximations are reproduced
    assert np.abs(r - exact_discrete_gamma(0.5, 4)).max() > 1e-11


def test_single_category_is_one():
    assert discrete_gamma(0.3, 1).tolist() == [1.0]


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0.02, 200.0), k=st.integers(2, 12))
def test_mean_one_increasing_and_close_to_exact(alpha, k):
    r = discrete_gamma(alpha, k)
    assert r.mean() == pytest.approx(1.0, abs=1e-12)
    step = np.diff(r)
    assert np.all(step >= 0)
    assert np.all(step[r[1:] > 1e-290] > 0)    # strictly, where the upper mean does not underflow (alpha ~ 0.02)
    assert r == pytest.approx(exact_discrete_gamma(alpha, k), abs=2e-6)


def test_helpers_against_scipy():
    for x in (0.1, 0.5, 1.0, 3.3, 7.0, 12.5, 100.0):
        assert ln_gamma(x) == pytest.approx(math.lgamma(x), abs=1e-9)
    for a, x in ((0.5, 0.2), (0.5, 3.0), (2.0, 1.5), (10.0, 14.0), (1.7, 0.01)):
        assert incomplete_gamma(x, a, math.lgamma(a)) == pytest.approx(special.gammainc(a, x), abs=1e-8)
    for p in (0.001, 0.1, 0.5, 0.8, 0.999):
        assert point_normal(p) == pytest.approx(stats.norm.ppf(p), abs=5e-8)
    for p, v in ((0.25, 1.0), (0.5, 0.2), (0.75, 3.0), (0.9, 40.0), (0.01, 0.1)):
        assert point_chi2(p, v) == pytest.approx(stats.chi2.ppf(p, v), rel=1e-5)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        discrete_gamma(0.0, 4)
    with pytest.raises(ValueError):
        discrete_gamma(1.0, 0)
    assert incomplete_gamma(-1.0, 1.0, 0.0) == -1.0
    assert point_chi2(0.0000001, 1.0) == -1.0


# MrBayes 3.2.7a's LnGamma (utils.c) at x < 0.5, where its `z = x-1.0; while (++z < 7.0)` rounds (x-1)+1:
# the values its C code gives (gcc, double), printed with 17 digits.
MRBAYES_LN_GAMMA = ((1e-05, 11.512919692880423), (0.001, 6.907178885363927), (0.05, 2.968879201033006),
                    (0.3, 1.0957979948043539), (3.3, 0.98709857788101296))


def test_ln_gamma_is_mrbayes_to_the_bit():
    """The +G kernels use MrBayes' LnGamma itself (mbgpu.clock.special's, compiled), not a near copy."""
    from mbgpu.clock import special as clock_special
    for x, want in MRBAYES_LN_GAMMA:
        assert ln_gamma(x) == want and clock_special.ln_gamma(x) == want
    assert ln_gamma is clock_special.ln_gamma
