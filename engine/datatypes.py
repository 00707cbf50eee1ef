"""Character alphabets and the conversion of matrix cells to state-set bit masks.

A cell is a single symbol or a `{..}`/`(..)` set; its mask has bit i set for each state i it allows.
Gaps and missing data allow every state, as in MrBayes; `CellCoder.blank` tells them apart from an
ambiguity that allows every state (N), which MrBayes keeps as codes of their own.
"""
from __future__ import annotations

DNA = "ACGT"
RNA = "ACGU"
PROTEIN = "ARNDCQEGHILKMFPSTWYV"
STANDARD_DEFAULT = "0123456789"

_IUPAC = {
    "R": "AG", "Y": "CT", "M": "AC", "K": "GT", "S": "CG", "W": "AT",
    "H": "ACT", "B": "CGT", "V": "ACG", "D": "AGT", "N": "ACGT", "X": "ACGT",
}
_PROTEIN_AMBIG = {"B": "DN", "Z": "EQ", "J": "IL", "X": PROTEIN}

DATATYPES = ("dna", "rna", "protein", "standard")

STATES, MISSING, GAP = 0, 1, 2      # what a cell is (CellCoder.blank): a state set, missing data, a gap


def alphabet(datatype: str, symbols: str | None = None) -> str:
    """The ordered states of a datatype (standard data: its `symbols`, default 0-9)."""
    if datatype == "dna":
        return DNA
    if datatype == "rna":
        return RNA
    if datatype == "protein":
        return PROTEIN
    if datatype == "standard":
        return symbols or STANDARD_DEFAULT
    raise ValueError("unknown datatype %r" % datatype)


def _symbol_states(datatype: str, alpha: str, ch: str) -> str | None:
    """The states one symbol stands for, or None if it is illegal for the datatype."""
    up = ch if datatype == "standard" else ch.upper()
    if up in alpha:
        return up
    if datatype in ("dna", "rna"):
        if up in _IUPAC:
            return _IUPAC[up].replace("T", "U") if datatype == "rna" else _IUPAC[up]
        if up == "U" and datatype == "dna":
            return "T"
        if up == "T" and datatype == "rna":
            return "U"
    if datatype == "protein" and up in _PROTEIN_AMBIG:
        return _PROTEIN_AMBIG[up]
    return None


class CellCoder:
    """Maps cell strings of one datatype to bit masks, caching each distinct cell."""

    def __init__(self, datatype: str, symbols: str | None = None, gap: str = "-", missing: str = "?"):
        self.datatype = datatype
        self.alpha = alphabet(datatype, symbols)
        self.all_mask = (1 << len(self.alpha)) - 1
        self.gap, self.missing = gap, missing
        self._cache: dict[str, int] = {}
        self._blank: dict[str, int] = {}

    def mask(self, cell: str) -> int | None:
        """Bit mask of `cell`, or None when it holds a symbol illegal for this datatype."""
        got = self._cache.get(cell)
        if got is None:
            got = self._compute(cell)
            if got is not None:
                self._cache[cell] = got
        return got

    def blank(self, cell: str) -> int:
        """MISSING, GAP or STATES for a legal `cell`, as MrBayes reads it: a state or ambiguity symbol first
        (so `missing=N` leaves N an ambiguity of DNA), then the missing and gap symbols; protein's X is
        missing data in MrBayes. Sets are STATES (MrBayes refuses ? and - inside them)."""
        got = self._blank.get(cell)
        if got is None:
            got = self._blank[cell] = self._compute_blank(cell)
        return got

    def _compute_blank(self, cell: str) -> int:
        if len(cell) != 1:
            return STATES
        if self.datatype == "protein" and cell in "Xx":
            return MISSING
        if _symbol_states(self.datatype, self.alpha, cell) is not None:
            return STATES
        if cell in (self.missing, "?"):
            return MISSING
        return GAP if cell in (self.gap, "-") else STATES

    def _compute(self, cell: str) -> int | None:
        if cell in (self.gap, self.missing, "?", "-"):
            return self.all_mask
        inner = cell[1:-1] if cell[:1] in "{(" else cell
        if cell[:1] in "{(":
            inner = inner.replace(",", "").replace(" ", "")
            if not inner:
                return None
        m = 0
        for ch in inner:
            if ch in (self.gap, self.missing, "?", "-"):
                return self.all_mask
            states = _symbol_states(self.datatype, self.alpha, ch)
            if states is None:
                return None
            for s in states:
                m |= 1 << self.alpha.index(s)
        return m
