"""Substitution matrices for global alignment: BLOSUM62 built in, NCBI matrix files, DNA match/mismatch.

A `ScoringMatrix` maps letters to small integer codes (0..size-1) and holds the `size x size` integer
scores; sequences are encoded once and every backend (numpy, CUDA) works on the codes.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError

# NCBI BLOSUM62, scale ln(2)/2: the classic 24 letters exactly as in parasail and Biopython, plus the
# J (I/L) row and column of the BLAST+ 25-letter version.
_BLOSUM62_TEXT = """
   A  R  N  D  C  Q  E  G  H  I  L  K  M  F  P  S  T  W  Y  V  B  J  Z  X  *
A  4 -1 -2 -2  0 -1 -1  0 -2 -1 -1 -1 -1 -2 -1  1  0 -3 -2  0 -2 -1 -1  0 -4
R -1  5  0 -2 -3  1  0 -2  0 -3 -2  2 -1 -3 -2 -1 -1 -3 -2 -3 -1 -2  0 -1 -4
N -2  0  6  1 -3  0  0  0  1 -3 -3  0 -2 -3 -2  1  0 -4 -2 -3  3 -3  0 -1 -4
D -2 -2  1  6 -3  0  2 -1 -1 -3 -4 -1 -3 -3 -1  0 -1 -4 -3 -3  4 -3  1 -1 -4
C  0 -3 -3 -3  9 -3 -4 -3 -3 -1 -1 -3 -1 -2 -3 -1 -1 -2 -2 -1 -3 -1 -3 -2 -4
Q -1  1  0  0 -3  5  2 -2  0 -3 -2  1  0 -3 -1  0 -1 -2 -1 -2  0 -2  3 -1 -4
E -1  0  0  2 -4  2  5 -2  0 -3 -3  1 -2 -3 -1  0 -1 -3 -2 -2  1 -3  4 -1 -4
G  0 -2  0 -1 -3 -2 -2  6 -2 -4 -4 -2 -3 -3 -2  0 -2 -2 -3 -3 -1 -4 -2 -1 -4
H -2  0  1 -1 -3  0  0 -2  8 -3 -3 -1 -2 -1 -2 -1 -2 -2  2 -3  0 -3  0 -1 -4
I -1 -3 -3 -3 -1 -3 -3 -4 -3  4  2 -3  1  0 -3 -2 -1 -3 -1  3 -3  3 -3 -1 -4
L -1 -2 -3 -4 -1 -2 -3 -4 -3  2  4 -2  2  0 -3 -2 -1 -2 -1  1 -4  3 -3 -1 -4
K -1  2  0 -1 -3  1  1 -2 -1 -3 -2  5 -1 -3 -1  0 -1 -3 -2 -2  0 -3  1 -1 -4
M -1 -1 -2 -3 -1  0 -2 -3 -2  1  2 -1  5  0 -2 -1 -1 -1 -1  1 -3  2 -1 -1 -4
F -2 -3 -3 -3 -2 -3 -3 -3 -1  0  0 -3  0  6 -4 -2 -2  1  3 -1 -3  0 -3 -1 -4
P -1 -2 -2 -1 -3 -1 -1 -2 -2 -3 -3 -1 -2 -4  7 -1 -1 -4 -3 -2 -2 -3 -1 -2 -4
S  1 -1  1  0 -1  0  0  0 -1 -2 -2  0 -1 -2 -1  4  1 -3 -2 -2  0 -2  0  0 -4
T  0 -1  0 -1 -1 -1 -1 -2 -2 -1 -1 -1 -1 -2 -1  1  5 -2 -2  0 -1 -1 -1  0 -4
W -3 -3 -4 -4 -2 -2 -3 -2 -2 -3 -2 -3 -1  1 -4 -3 -2 11  2 -3 -4 -2 -3 -2 -4
Y -2 -2 -2 -3 -2 -1 -2 -3  2 -1 -1 -2 -1  3 -3 -2 -2  2  7 -1 -3 -1 -2 -1 -4
V  0 -3 -3 -3 -1 -2 -2 -3 -3  3  1 -2  1 -1 -2 -2  0 -3 -1  4 -3  2 -2 -1 -4
B -2 -1  3  4 -3  0  1 -1  0 -3 -4  0 -3 -3 -2  0 -1 -4 -3 -3  4 -3  1 -1 -4
J -1 -2 -3 -3 -1 -2 -3 -4 -3  3  3 -3  2  0 -3 -2 -1 -2 -1  2 -3  3 -3 -1 -4
Z -1  0  0  1 -3  3  4 -2  0 -3 -3  1 -1 -3 -1  0 -1 -3 -2 -2  1 -3  4 -1 -4
X  0 -1 -1 -1 -2 -1 -1 -1 -1 -1 -1 -1 -1 -1 -2  0  0 -2 -1 -1 -1 -1 -1 -1 -4
* -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4 -4  1
"""

MAX_ALPHABET = 31  # codes 0..30; the GPU kernels reserve code 31 for padding


@dataclass(frozen=True)
class ScoringMatrix:
    """Letters, their integer scores and a byte -> code lookup table (255 = not in the alphabet)."""

    name: str
    letters: str
    scores: np.ndarray  # int32 [size, size]

    @property
    def size(self) -> int:
        return len(self.letters)

    @property
    def lookup(self) -> np.ndarray:
        """uint8[256]: code of each byte (upper and lower case), 255 for letters outside the alphabet."""
        table = np.full(256, 255, dtype=np.uint8)
        for code, ch in enumerate(self.letters):
            table[ord(ch.upper())] = code
            table[ord(ch.lower())] = code
        return table

    def score_of(self, a: str, b: str) -> int:
        """The score of aligning letter `a` with letter `b` (case-insensitive)."""
        lut = self.lookup
        return int(self.scores[lut[ord(a)], lut[ord(b)]])


def parse_ncbi(text: str, name: str = "<matrix>") -> ScoringMatrix:
    """Parse an NCBI-format matrix (`#` comments, a header of letters, one row per letter)."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise InputFileError("%s: no matrix found (expected an NCBI matrix: header of letters, then rows)" % name)
    header = rows[0]
    if any(len(h) != 1 for h in header):
        raise InputFileError("%s: line 1 of the matrix must list single letters, got %r" % (name, " ".join(header)))
    size = len(header)
    if size > MAX_ALPHABET:
        raise InputFileError("%s: %d letters; at most %d are supported" % (name, size, MAX_ALPHABET))
    scores = np.zeros((size, size), dtype=np.int32)
    seen = {}
    for k, row in enumerate(rows[1:], start=2):
        letter, values = row[0], row[1:]
        if letter not in header or len(values) != size:
            raise InputFileError("%s: matrix row %d (%r) must be one header letter and %d integers"
                                 % (name, k, letter, size))
        try:
            scores[header.index(letter)] = [int(v) for v in values]
        except ValueError:
            raise InputFileError("%s: matrix row %d (%r) holds a non-integer score" % (name, k, letter)) from None
        seen[letter] = True
    missing = [h for h in header if h not in seen]
    if missing:
        raise InputFileError("%s: no matrix row for %s" % (name, ", ".join(missing)))
    return ScoringMatrix(name, "".join(header).upper(), scores)


def blosum62() -> ScoringMatrix:
    """The built-in NCBI BLOSUM62 (25 letters: 20 amino acids, B, J, Z, X and the stop `*`)."""
    return parse_ncbi(_BLOSUM62_TEXT, "blosum62")


def dna(match: int = 5, mismatch: int = -4) -> ScoringMatrix:
    """A DNA match/mismatch matrix over ACGTN (N scores `mismatch` against everything)."""
    letters = "ACGTN"
    scores = np.full((5, 5), mismatch, dtype=np.int32)
    np.fill_diagonal(scores[:4, :4], match)
    return ScoringMatrix("dna%+d%+d" % (match, mismatch), letters, scores)


def load_matrix(spec: str) -> ScoringMatrix:
    """`blosum62`, `dna` / `dna:MATCH:MISMATCH`, or the path of an NCBI matrix file."""
    low = spec.lower()
    if low == "blosum62":
        return blosum62()
    if low == "dna" or low.startswith("dna:"):
        parts = spec.split(":")
        try:
            values = [int(p) for p in parts[1:]]
        except ValueError:
            raise InputFileError("--matrix %s: expected dna:MATCH:MISMATCH with integers" % spec) from None
        if len(values) not in (0, 2):
            raise InputFileError("--matrix %s: expected dna or dna:MATCH:MISMATCH" % spec)
        return dna(*values)
    path = Path(spec)
    if not path.is_file():
        raise InputFileError("--matrix %s: not a built-in matrix (blosum62, dna[:M:X]) and no such file" % spec)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError("%s: cannot read the matrix file (%s)" % (spec, exc)) from None
    return parse_ncbi(text, spec)
