"""The AutoGrid electrostatics constants, the Mehler-Solmajer table and its indexing."""
import math

import numpy as np
import pytest

from mbgpu.grid.dielectric import (MAX_DIST, ElectrostaticModel, epsilon_table, mehler_solmajer,
                                    reciprocal_table, table_index)


def ms_direct(r: float) -> float:
    """distdepdiel.cpp written out independently with the math module."""
    lam, eps0, a, rk = 0.003627, 78.4, -8.5525, 7.7839
    b = eps0 - a
    eps = a + b / (1.0 + rk * math.exp(-lam * b * r))
    return 1.0 if eps < 1e-6 else eps


def test_table_entries_are_the_function_at_bin_edges():
    eps = epsilon_table()
    assert eps.shape == (MAX_DIST,)
    assert eps[0] == 1.0
    for i in (1, 2, 37, 100, 850, 5000, MAX_DIST - 1):
        assert eps[i] == pytest.approx(ms_direct(i / 100.0), rel=1e-14)
    assert np.all(np.diff(eps[1:]) >= 0) and eps[2] > eps[1]  # increasing towards 78.4
    assert eps[-1] == pytest.approx(78.4, abs=1e-6)


def test_reciprocal_table_holds_332_over_eps():
    rt = reciprocal_table()
    assert rt[0] == 332.0
    assert rt[100] == pytest.approx(332.0 / ms_direct(1.0), rel=1e-14)


def test_table_index_truncates_and_caps():
    r = np.array([0.0, 0.0099999, 0.01, 0.0199999, 1.2345, 163.83, 163.84, 500.0])
    assert table_index(r).tolist() == [0, 0, 1, 1, 123, 16383, 16383, 16383]


def test_mehler_solmajer_vectorised_matches_scalar():
    r = np.linspace(0.0, 40.0, 17)
    assert np.allclose(mehler_solmajer(r), [ms_direct(x) for x in r], rtol=1e-14)


@pytest.mark.parametrize("value, ddd, diel", [(-0.1465, True, 40.0), (-1.0, True, 40.0),
                                              (4.0, False, 4.0), (0.0, False, 40.0),
                                              (1e-7, False, 40.0), (78.5, False, 78.5)])
def test_gpf_dielectric_rule(value, ddd, diel):
    m = ElectrostaticModel.from_gpf_value(value, 0.2)
    assert (m.distance_dependent, m.dielectric, m.coeff_estat) == (ddd, diel, 0.2)


def test_constant_scale():
    m = ElectrostaticModel.from_gpf_value(4.0, 0.1406)
    assert m.constant_scale == pytest.approx(0.1406 * 332.0 / 4.0, rel=1e-15)
