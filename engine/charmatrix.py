"""The character matrix: taxa, per-column datatype, and cells as state-set bit masks.

Built from a NEXUS data/characters block's `dimensions`, `format` and `matrix` commands.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mbgpu.datatypes import STATES, CellCoder, alphabet
from mbgpu.errors import DataError


@dataclass
class Format:
    """The `format` command of a data block (MrBayes' defaults)."""

    datatype: str = "dna"
    mixed: list[tuple[str, int, int]] = field(default_factory=list)  # (datatype, first, last) 1-based
    interleave: bool = False
    gap: str = "-"
    missing: str = "?"
    matchchar: str | None = None
    symbols: str | None = None

    def column_datatypes(self, nchar: int) -> list[str]:
        """The datatype of every column (1-based ranges of `mixed` resolved)."""
        if self.datatype != "mixed":
            return [self.datatype] * nchar
        out: list[str | None] = [None] * nchar
        for dt, a, b in self.mixed:
            for j in range(a - 1, b):
                out[j] = dt
        missing = [j + 1 for j, d in enumerate(out) if d is None]
        if missing:
            raise DataError("datatype=mixed(...) leaves character %d without a datatype" % missing[0])
        return out  # type: ignore[return-value]


@dataclass
class CharacterMatrix:
    """Taxa x characters as bit masks; `datatypes[j]` is the datatype of column j."""

    taxa: list[str]
    masks: np.ndarray  # uint32 [ntax, nchar]
    datatypes: list[str]
    symbols: str | None = None
    # per column: a cell is missing or ambiguous (MrBayes' isMissAmbig, shown by charstat; as MrBayes
    # shows, gap and missing cells count in standard and protein columns, not in DNA/RNA ones, ambiguity
    # codes such as N everywhere)
    miss_ambig: np.ndarray | None = None
    # uint8 [ntax, nchar]: STATES, MISSING or GAP (mbgpu.datatypes) per cell: a gap and missing data have
    # the mask of every state, as N has; showmatrix prints them as MrBayes does ('-', '?', 'N')
    blank: np.ndarray | None = None

    @property
    def ntax(self) -> int:
        return len(self.taxa)

    @property
    def nchar(self) -> int:
        return self.masks.shape[1]

    def states(self, datatype: str) -> str:
        return alphabet(datatype, self.symbols)


def encode(rows, fmt: Format, src, nchar: int) -> CharacterMatrix:
    """Convert parsed matrix rows to masks, resolving matchchar and checking every symbol."""
    coltypes = fmt.column_datatypes(nchar)
    coders = {dt: CellCoder(dt, fmt.symbols, fmt.gap, fmt.missing) for dt in set(coltypes)}
    got = _encode_single_chars(rows, fmt, coltypes, coders, nchar)
    masks, blank = got if got is not None else _encode_cells(rows, fmt, src, coltypes, coders, nchar)
    several = (masks & (masks - np.uint32(1))) != 0
    nucleotide = np.array([dt in ("dna", "rna") for dt in coltypes], dtype=bool)[None, :]
    miss_ambig = (several & ~((blank != STATES) & nucleotide)).any(axis=0) if masks.shape[0] \
        else np.zeros(nchar, dtype=bool)
    return CharacterMatrix(list(rows.names), masks, coltypes, fmt.symbols, miss_ambig, blank)


def _encode_single_chars(rows, fmt: Format, coltypes, coders, nchar: int):
    """(masks, blank codes) by table lookup when every cell is one ASCII character and legal (the common
    case: large matrices without ambiguity sets); None otherwise, and _encode_cells does it (and reports)."""
    kinds = sorted(set(coltypes))
    if len(rows.names) == 0:
        return None
    table = np.zeros((len(kinds), 128), dtype=np.uint32)           # 0: not a legal single symbol
    blanks = np.zeros((len(kinds), 128), dtype=np.uint8)
    for k, dt in enumerate(kinds):
        for code in range(33, 127):
            got = coders[dt].mask(chr(code))
            table[k, code] = got or 0
            blanks[k, code] = coders[dt].blank(chr(code)) if got else STATES
    codes = np.empty((len(rows.names), nchar), dtype=np.uint8)
    for i, row in enumerate(rows.cells):
        text = "".join(row)
        if len(text) != nchar or len(row) != nchar or not text.isascii():
            return None
        codes[i] = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    if fmt.matchchar is not None:
        match = codes == ord(fmt.matchchar) if len(fmt.matchchar) == 1 and fmt.matchchar.isascii() else None
        if match is None or match[0].any():
            return None
        codes = np.where(match, codes[0][None, :], codes)
    kind_of = np.array([kinds.index(dt) for dt in coltypes], dtype=np.intp)
    masks = table[kind_of[None, :], codes]
    return None if not masks.all() else (masks, blanks[kind_of[None, :], codes])


def _encode_cells(rows, fmt: Format, src, coltypes, coders, nchar: int):
    """(masks, blank codes) cell by cell (ambiguity sets, matchchar, and the exact error for an illegal
    symbol)."""
    masks = np.zeros((len(rows.names), nchar), dtype=np.uint32)
    blank = np.zeros((len(rows.names), nchar), dtype=np.uint8)
    first = rows.cells[0]
    for i, (name, row) in enumerate(zip(rows.names, rows.cells)):
        for j, cell in enumerate(row):
            if fmt.matchchar is not None and cell == fmt.matchchar:
                if i == 0:
                    raise src.error(rows.offsets[i][j], "matchchar '%s' in the first taxon's row" % cell,
                                    DataError)
                cell = first[j]
            m = coders[coltypes[j]].mask(cell)
            if m is None:
                raise _illegal(src, rows, i, j, cell, coltypes[j])
            masks[i, j] = m
            blank[i, j] = coders[coltypes[j]].blank(cell)
    return masks, blank


def _illegal(src, rows, i: int, j: int, cell: str, datatype: str) -> DataError:
    pos = rows.offsets[i][j]
    hint = ""
    if pos == 0 or src.text[pos - 1] == "\n":
        hint = " (is the previous row shorter than nchar?)"
    return src.error(pos, "illegal character '%s' for datatype %s (taxon '%s', character %d)%s"
                     % (cell, datatype, rows.names[i], j + 1, hint), DataError)
