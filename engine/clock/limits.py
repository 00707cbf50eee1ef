"""MrBayes 3.2.7a's bounds for clock-tree values (bayes.h), in one place for every clock kernel.

bayes.h writes them as float literals (`1E-8f`), so MrBayes' double arithmetic compares with their float32
values (1e-8f is 9.99999993922529e-09): `f32` gives that value. Plain module constants, which numba
compiles as constants.
"""
from __future__ import annotations

import numpy as np


def f32(x: float) -> float:
    """The double value of the C float literal x (what MrBayes compares with)."""
    return float(np.float32(x))


BRLENS_MIN, BRLENS_MAX = f32(1e-8), 100.0           # branch lengths (BRLENS_MIN must exceed TIME_MIN)
TIME_MIN = f32(1.0e-11)                             # a shorter branch is a sampled ancestor's
RELBRLENS_MIN, RELBRLENS_MAX = f32(1e-8), 100.0     # effective (relaxed-clock) branch lengths
RATE_MIN, RATE_MAX = f32(1e-6), 100.0               # relaxed-clock branch rates
IGRVAR_MIN, IGRVAR_MAX = f32(1e-6), 10000.0
TK02VAR_MIN, TK02VAR_MAX = f32(1e-6), 10000.0
CPPLAMBDA_MIN, CPPLAMBDA_MAX = f32(1e-5), 100.0     # CPP event rate
CPPMULT_MIN, CPPMULT_MAX = f32(0.001), 1000.0       # CPPRATEMULTIPLIER_MIN / _MAX
POS_MIN, POS_INFINITY = f32(1e-25), f32(1e25)
TREEHEIGHT_MAX = 1000.0                             # the top of a root's window
