"""Empirical amino-acid models (exchangeabilities and frequencies) as MrBayes 3.2.7a uses them.

The numbers live in engine/data/aamodels/NAME.dat (PAML-like: 19 lines of the lower triangle of
the symmetric exchangeability matrix, then 20 frequencies; state order A R N D C Q E G H I L K M F P
S T W Y V). `poisson` and `equalin` have equal exchangeabilities and need no file.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from mbgpu.errors import ModelError
from mbgpu.param_kinds import AA_MODELS as ALL_MODELS

AA_ORDER = "ARNDCQEGHILKMFPSTWYV"
EMPIRICAL_MODELS = tuple(m for m in ALL_MODELS if m not in ("poisson", "equalin", "gtr"))   # those with a .dat file
DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "aamodels"


def parse_aamodel(text: str, source: str = "<aamodel>") -> tuple[np.ndarray, np.ndarray]:
    """Parse the .dat format into (S 20x20 symmetric with zero diagonal, pi 20 summing to 1)."""
    numbers: list[float] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            numbers.extend(float(tok) for tok in line.split())
    if len(numbers) != 190 + 20:
        raise ModelError("%s: expected 210 numbers (190 exchangeabilities + 20 frequencies), found %d"
                         % (source, len(numbers)))
    s = np.zeros((20, 20))
    pos = 0
    for i in range(1, 20):
        s[i, :i] = numbers[pos:pos + i]
        pos += i
    s = s + s.T
    pi = np.array(numbers[190:], dtype=np.float64)
    return s, pi / pi.sum()


def load_aamodel(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(exchangeabilities, frequencies) of a fixed amino-acid model; `poisson` is all ones and 1/20."""
    key = name.lower()
    if key in ("poisson", "equalin"):
        s = np.ones((20, 20)) - np.eye(20)
        return s, np.full(20, 1.0 / 20.0)
    if key not in EMPIRICAL_MODELS:
        raise ModelError("unknown amino-acid model %r; choose one of %s" % (name, ", ".join(ALL_MODELS)))
    path = DATA_DIR / ("%s.dat" % key)
    return parse_aamodel(path.read_text(), str(path))


def aa_revmat_to_matrix(rates: np.ndarray) -> np.ndarray:
    """190 GTR exchangeabilities in MrBayes order (row-major upper triangle: AR, AN, ..., YV) -> 20x20."""
    rates = np.asarray(rates, dtype=np.float64)
    if rates.shape != (190,):
        raise ModelError("aarevmat needs 190 rates, got %d" % rates.size)
    s = np.zeros((20, 20))
    iu = np.triu_indices(20, k=1)
    s[iu] = rates
    return s + s.T
