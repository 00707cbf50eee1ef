"""Whole 61^3 AutoGrid maps against the numpy reference (slow: about 15 s per map on 2 cores)."""
import numpy as np
import pytest

from mbgpu.grid.mapfile import format_values
from mbgpu.grid.reference import potential_grid

TOL = 0.0015


@pytest.mark.slow
@pytest.mark.parametrize("key", ["ddd", "const4"])
def test_oracle_full_map(oracle, key):
    case = oracle(key)
    ours = potential_grid(case.spec, case.receptor.coords, case.receptor.charges, case.params.model)
    assert np.max(np.abs(ours.ravel() - case.values)) <= TOL
    same = sum(a == b for a, b in zip(format_values(ours), case.lines))
    assert same >= case.spec.n_points - 10
