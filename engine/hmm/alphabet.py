"""Easel's amino-acid digital alphabet and HMMER's background frequencies (bit-exact constants).

Codes follow Easel: 0..19 canonical `ACDEFGHIKLMNPQRSTVWY`, 20 gap, 21..25 the degenerate
`BJZOU`, 26 `X` (any), 27 `*` (not a residue), 28 `~` (missing). Code 29 pads packed sequences
to whole 32-bit words; it scores like a gap (never part of a diagonal).
"""
from __future__ import annotations

import numpy as np

SYMBOLS = "ACDEFGHIKLMNPQRSTVWY-BJZOUX*~"
K = 20
KP = 29
GAP = 20
PAD = 29
NCODES = 30

# p7_AminoFrequencies(): Swiss-Prot 50.8 background, single precision as HMMER stores them.
BACKGROUND = np.array([
    0.0787945, 0.0151600, 0.0535222, 0.0668298, 0.0397062, 0.0695071, 0.0229198,
    0.0590092, 0.0594422, 0.0963728, 0.0237718, 0.0414386, 0.0482904, 0.0395639,
    0.0540978, 0.0683364, 0.0540687, 0.0673417, 0.0114135, 0.0304133], dtype=np.float32)

# Canonical residues each degenerate code stands for (Easel's amino degeneracies).
DEGENERATE = {"B": "DN", "J": "IL", "Z": "EQ", "O": "K", "U": "C", "X": SYMBOLS[:K]}


def input_map() -> np.ndarray:
    """A 256-entry table text byte -> code; 255 marks a byte that is not a sequence symbol."""
    table = np.full(256, 255, dtype=np.uint8)
    for code, ch in enumerate(SYMBOLS):
        table[ord(ch)] = code
        table[ord(ch.lower())] = code
    for ch in "._":
        table[ord(ch)] = GAP
    return table


def degeneracy_mask() -> np.ndarray:
    """bool[KP, K]: which canonical residues each code covers (empty rows: gap, *, ~)."""
    mask = np.zeros((KP, K), dtype=bool)
    mask[np.arange(K), np.arange(K)] = True
    for ch, members in DEGENERATE.items():
        for m in members:
            mask[SYMBOLS.index(ch), SYMBOLS.index(m)] = True
    return mask
