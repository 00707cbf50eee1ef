"""The AutoGrid 4.2.6 electrostatics model: constants, the Mehler-Solmajer table, the coefficient.

AutoGrid adds, for every receptor atom i at distance r from a grid point,
    coeff * q_i * (1 / max(r, 0.5)) * (332 / eps)
with r clamped below at APPROX_ZERO, eps a constant, or (distance-dependent) the Mehler-Solmajer
eps(r) read from a table of 0.01 A bins: entry int(r * 100), capped at MAX_DIST - 1; entry 0 is 1.0.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FACTOR = 332.0          # AutoGrid's `factor`: kcal/mol * A / e^2
APPROX_ZERO = 1.0e-6    # autocomm.h: smallest distance used
A_DIV = 100.0           # table bins per Angstrom
MAX_DIST = 16384        # table entries (163.84 A); larger r use the last entry
R_MIN_INV = 0.5         # 1 / max(r, 0.5)
DEFAULT_COEFF_ESTAT = 0.1406   # AD4.1 FE_coeff_estat
DEFAULT_CONSTANT_DIEL = 40.0   # AutoGrid uses 40 for `dielectric 0`

# Mehler & Solmajer, Prot Eng 4, 903-910 (AutoGrid distdepdiel.cpp)
MS_LAMBDA = 0.003627
MS_EPSILON0 = 78.4
MS_A = -8.5525
MS_RK = 7.7839


def mehler_solmajer(r: np.ndarray | float) -> np.ndarray:
    """eps(r) = A + B / (1 + k exp(-lambda B r)), B = eps0 - A; values below APPROX_ZERO become 1."""
    b = MS_EPSILON0 - MS_A
    eps = MS_A + b / (1.0 + MS_RK * np.exp(-MS_LAMBDA * b * np.asarray(r, dtype=np.float64)))
    return np.where(eps < APPROX_ZERO, 1.0, eps)


def epsilon_table() -> np.ndarray:
    """AutoGrid's eps table: entry i is eps(i * 0.01 A) for i >= 1 and 1.0 for i = 0."""
    eps = mehler_solmajer(np.arange(MAX_DIST, dtype=np.float64) * (1.0 / A_DIV))
    eps[0] = 1.0
    return eps


def reciprocal_table() -> np.ndarray:
    """factor / eps for every bin: the table AutoGrid multiplies by (332 at bin 0)."""
    return FACTOR / epsilon_table()


def table_index(r: np.ndarray) -> np.ndarray:
    """Bin of each distance as AutoGrid computes it: min(int(r * 100), MAX_DIST - 1)."""
    return np.minimum((np.asarray(r) * A_DIV).astype(np.int64), MAX_DIST - 1)


@dataclass(frozen=True)
class ElectrostaticModel:
    """How the map is computed: distance-dependent or constant `dielectric`, and FE_coeff_estat."""

    distance_dependent: bool = True
    dielectric: float = DEFAULT_CONSTANT_DIEL
    coeff_estat: float = DEFAULT_COEFF_ESTAT

    @classmethod
    def from_gpf_value(cls, value: float, coeff_estat: float = DEFAULT_COEFF_ESTAT) -> "ElectrostaticModel":
        """AutoGrid's rule: negative means Mehler-Solmajer, <= APPROX_ZERO means 40, else constant."""
        if value < 0.0:
            return cls(True, DEFAULT_CONSTANT_DIEL, coeff_estat)
        return cls(False, DEFAULT_CONSTANT_DIEL if value <= APPROX_ZERO else float(value), coeff_estat)

    @property
    def constant_scale(self) -> float:
        """coeff * 332 / eps for the constant dielectric (per unit charge / distance)."""
        return self.coeff_estat * FACTOR / self.dielectric

    def describe(self) -> str:
        if self.distance_dependent:
            return "distance-dependent (Mehler-Solmajer) dielectric, FE_coeff_estat %g" % self.coeff_estat
        return "constant dielectric %g, FE_coeff_estat %g" % (self.dielectric, self.coeff_estat)
