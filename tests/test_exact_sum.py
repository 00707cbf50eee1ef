"""mbgpu.exact_sum.fsum_rows gives math.fsum's bits (the GPU flushes' totals must not change)."""
import math

import numpy as np
import pytest

from mbgpu.exact_sum import fsum_rows


def _rows(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 600))
    rows = [rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, size=n),        # wide exponents
            np.concatenate([rng.normal(size=n) * 1e16, -rng.normal(size=n) * 1e16])[:n],
            -np.abs(rng.normal(size=n)) * 1e4,                                  # block sums of log likelihoods
            rng.normal(size=n) * 1e-300]                                        # subnormal range
    big = rng.normal(size=n) * 1e20
    rows.append(np.concatenate([big, -big, rng.normal(size=n)])[:n])            # cancellation to the small rest
    return np.array([np.resize(r, n) for r in rows])


@pytest.mark.parametrize("seed", range(40))
def test_fsum_rows_equals_math_fsum(seed):
    values = _rows(seed)
    got = fsum_rows(values)
    for row, total in zip(values.tolist(), got.tolist()):
        assert total == math.fsum(row)


def _neumaier(row):
    t = c = 0.0
    for x in row:
        y = t + x
        c += (t - y) + x if abs(t) >= abs(x) else (x - y) + t
        t = y
    return t + c


def test_half_even_rounding_cases():
    """Exact sums just off half-way between two doubles: a compensated (Neumaier) sum rounds them the
    wrong way, math.fsum (and so fsum_rows) does not."""
    rows = np.array([[1.0, 2.0 ** -53, 2.0 ** -106, 0.0], [1.0, -(2.0 ** -54), -(2.0 ** -107), 0.0],
                     [1.0, 2.0 ** -53, 2.0 ** -113, 2.0 ** -130], [2.0 ** 60, 64.0, 2.0 ** -40, 0.0]])
    got = fsum_rows(rows)
    for row, total in zip(rows.tolist(), got.tolist()):
        assert total == math.fsum(row)
    assert sum(_neumaier(r) != math.fsum(r) for r in rows.tolist()) >= 3      # the cases do discriminate


def test_empty_and_zero_rows():
    assert fsum_rows(np.zeros((3, 0))).tolist() == [0.0, 0.0, 0.0]
    assert fsum_rows(np.array([[0.0, -0.0]])).tolist() == [math.fsum([0.0, -0.0])]
