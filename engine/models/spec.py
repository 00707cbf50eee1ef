"""ModelSpec: the declarative description of one partition's substitution model (MrBayes lset/prset)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from mbgpu.errors import ModelError

DATATYPES = ("dna", "rna", "protein", "standard")
RATE_MODELS = ("equal", "gamma", "propinv", "invgamma")
CODINGS = ("all", "variable")
NUCLEOTIDE_RATE_ORDER = ("AC", "AG", "AT", "CG", "CT", "GT")
MAX_ORDERED_STATES = 6   # MrBayes: "Only unordered model supported for characters with more than 6 states"


@dataclass
class ModelSpec:
    """One partition's model with fixed parameter values.

    Fields follow MrBayes' names: `nst` 1|2|6 for nucleotides; `revmat` six exchangeabilities in the
    order AC AG AT CG CT GT (any scale); `kappa` the transition/transversion rate ratio for nst=2;
    `statefreqs` None for equal frequencies (or the fixed/empirical values); `aamodel` one of
    poisson jones dayhoff mtrev mtmam wag rtrev cprev vt blosum lg equalin gtr (`aarevmat`: 190 rates
    for gtr, MrBayes order); `rates` equal|gamma|propinv|invgamma with `alpha`, `ngammacat`, `pinvar`;
    `coding` all|variable (Mkv) for standard data; `n_states` is k for standard data (4 or 20 else);
    `ordered` standard data under `ctype ordered` (changes between adjacent states only).
    """

    datatype: str = "dna"
    n_states: Optional[int] = None
    nst: int = 1
    revmat: tuple = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    kappa: float = 1.0
    statefreqs: Optional[np.ndarray] = None
    aamodel: str = "poisson"
    aarevmat: Optional[np.ndarray] = None
    rates: str = "equal"
    alpha: float = 1.0
    ngammacat: int = 4
    pinvar: float = 0.0
    coding: str = "all"
    ordered: bool = False

    def resolved_n_states(self) -> int:
        """Number of states: 4 for DNA/RNA, 20 for protein, n_states (default 2) for standard."""
        if self.datatype in ("dna", "rna"):
            return 4
        if self.datatype == "protein":
            return 20
        return 2 if self.n_states is None else int(self.n_states)

    def validate(self) -> None:
        """Raise ModelError for settings MrBayes would refuse."""
        if self.datatype not in DATATYPES:
            raise ModelError("unknown datatype %r (expected one of %s)" % (self.datatype, ", ".join(DATATYPES)))
        if self.rates not in RATE_MODELS:
            raise ModelError("unknown rates=%r (expected one of %s)" % (self.rates, ", ".join(RATE_MODELS)))
        if self.coding not in CODINGS:
            raise ModelError("unknown coding=%r (expected all or variable)" % (self.coding,))
        if self.coding == "variable" and self.datatype != "standard":
            raise ModelError("coding=variable is only implemented for standard (morphology) data")
        if self.datatype in ("dna", "rna") and self.nst not in (1, 2, 6):
            raise ModelError("nst must be 1, 2 or 6, got %r" % (self.nst,))
        n = self.resolved_n_states()
        if self.datatype in ("dna", "rna", "protein") and self.n_states not in (None, n):
            raise ModelError("%s data has %d states, not %r" % (self.datatype, n, self.n_states))
        if self.datatype == "standard" and not 2 <= n <= 10:
            raise ModelError("standard data needs 2..10 states, got %d" % n)
        if self.ordered and (self.datatype != "standard" or n > MAX_ORDERED_STATES):
            raise ModelError("ordered characters need standard data with at most %d states (MrBayes)"
                             % MAX_ORDERED_STATES)
        if self.rates in ("gamma", "invgamma"):
            if not self.alpha > 0.0:
                raise ModelError("gamma shape must be > 0, got %r" % (self.alpha,))
            if not 1 <= int(self.ngammacat) <= 100:
                raise ModelError("ngammacat must be 1..100, got %r" % (self.ngammacat,))
        if self.rates in ("propinv", "invgamma") and not 0.0 <= self.pinvar < 1.0:
            raise ModelError("pinvar must be in [0, 1), got %r" % (self.pinvar,))
        if self.nst == 2 and not self.kappa > 0.0:
            raise ModelError("tratio (kappa) must be > 0, got %r" % (self.kappa,))
        if self.nst == 6 and (len(self.revmat) != 6 or min(self.revmat) < 0.0 or max(self.revmat) <= 0.0):
            raise ModelError("revmat needs six non-negative rates (AC AG AT CG CT GT), got %r" % (self.revmat,))
