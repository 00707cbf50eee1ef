"""`showmatrix;`: the data matrix as MrBayes 3.2.7a prints it (DoShowMatrix).

Every taxon and character, deleted and excluded ones too, in blocks of 50 characters headed by the
number of the block's first one; a cell is the symbol MrBayes prints for its stored code: IUPAC letters
for DNA and RNA state sets (RNA's U printed as T, as MrBayes does), `*` for a protein or standard set of
several states, a blank for sets MrBayes' printer has no symbol for (every amino acid, sets with V;
standard sets with state 9), `?` for missing data (protein X too) and `-` for gaps.
"""
from __future__ import annotations

import numpy as np

from mbgpu.charmatrix import CharacterMatrix
from mbgpu.datatypes import GAP, MISSING, PROTEIN

_SP = "   "         # MrBayes' spacer inside an executed file
_STRIDE = 50        # characters per block
_NUC = " ACMGRSVTWYHKDBN"     # MrBayes' letter for each DNA/RNA mask 0-15


def _protein(mask: int) -> str:
    """MrBayes' WhichAA: one amino acid, '*' for a set below V's bit, else a blank."""
    if mask & (mask - 1) == 0 and mask:
        return PROTEIN[mask.bit_length() - 1]
    return "*" if 0 < mask < 1 << 19 else " "


def _standard(mask: int) -> str:
    """MrBayes' WhichStand: one state 0-9, '*' for a set below state 9's bit, else a blank."""
    if mask & (mask - 1) == 0 and 0 < mask <= 1 << 9:
        return str(mask.bit_length() - 1)
    return "*" if 0 < mask < 1 << 9 else " "


def _nucleotide(mask: int) -> str:
    return _NUC[mask] if mask < len(_NUC) else " "


_SYMBOL = {"dna": _nucleotide, "rna": _nucleotide, "protein": _protein, "standard": _standard}


def cell_symbols(m: CharacterMatrix) -> np.ndarray:
    """uint8 [ntax, nchar]: the ASCII code MrBayes prints for every cell (one lookup per distinct mask)."""
    out = np.empty(m.masks.shape, dtype=np.uint8)
    types = np.array(m.datatypes)
    for dt in sorted(set(m.datatypes)):
        cols = np.flatnonzero(types == dt)
        sub = m.masks[:, cols]
        uniq, inverse = np.unique(sub, return_inverse=True)
        codes = np.array([ord(_SYMBOL[dt](int(x))) for x in uniq], dtype=np.uint8)
        out[:, cols] = codes[inverse].reshape(sub.shape)
    if m.blank is not None:
        out[m.blank == MISSING] = ord("?")
        out[m.blank == GAP] = ord("-")
    return out


def matrix_lines(m: CharacterMatrix) -> list[str]:
    """MrBayes' showmatrix lines: names padded to the longest, blocks of 50 characters, a blank line after each."""
    rows = [r.tobytes().decode("ascii") for r in cell_symbols(m)]
    width = max(len(name) for name in m.taxa)
    out = []
    for start in range(0, m.nchar, _STRIDE):
        out.append("%s   %s  %d" % (_SP, " " * width, start + 1))
        out.extend("%s   %s  %s" % (_SP, name.ljust(width), row[start:start + _STRIDE])
                   for name, row in zip(m.taxa, rows))
        out.append("")
    return out


def do_showmatrix(interp, spec, cmd) -> None:
    """`showmatrix;`: print the matrix as stored (after matchchar), every taxon and character."""
    for line in matrix_lines(interp.settings.matrix):
        interp.console.print(line)
