"""Read the rows of a NEXUS `matrix` command: taxon labels and cells, plain or interleaved.

Cells are kept as strings (one symbol, or a `{..}`/`(..)` set) with their offsets, so that errors
point at the exact character; conversion to states happens in `charmatrix`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from mbgpu.errors import DataError

from .tokenizer import Source, next_token, skip_blank

_RUN = re.compile(r"[^\s\[\]{}();'\"]+")


@dataclass
class Rows:
    """Matrix rows in taxon order: labels, cells and the offset of every cell."""

    names: list[str]
    cells: list[list[str]]
    offsets: list[list[int]]


def _read_cell_set(src: Source, pos: int, end: int) -> tuple[str, int]:
    close = "}" if src.text[pos] == "{" else ")"
    stop = src.text.find(close, pos, end)
    if stop < 0:
        raise src.error(pos, "unterminated state set %r" % src.text[pos], DataError)
    return src.text[pos:stop + 1], stop + 1


def _read_cells(src: Source, pos: int, end: int, need: int | None, row: list, offs: list) -> int:
    """Append cells to `row` until `need` are read (plain) or the line ends (need None)."""
    text = src.text
    while (need is None or len(row) < need):
        pos = skip_blank(src, pos, stop_at_newline=need is None)
        if pos >= end or (need is None and text[pos] == "\n"):
            return pos
        ch = text[pos]
        if ch in "{(":
            cell, nxt = _read_cell_set(src, pos, end)
            row.append(cell)
            offs.append(pos)
            pos = nxt
            continue
        m = _RUN.match(text, pos, end)
        if m is None:
            raise src.error(pos, "unexpected %r in the matrix" % ch, DataError)
        run = m.group(0)
        if need is not None and len(row) + len(run) > need:
            run = run[: need - len(row)]
        row.extend(run)
        offs.extend(range(pos, pos + len(run)))
        pos += len(run)
    return pos


def read_rows(src: Source, span: tuple[int, int], ntax: int, nchar: int, interleave: bool,
              known_taxa: list[str] | None = None) -> Rows:
    """Parse the matrix text in `span` into `ntax` rows of `nchar` cells each.

    A plain (non-interleaved) matrix is first read one row per line, which locates a row of the
    wrong length exactly; if that does not give `ntax` rows (rows wrapped over several lines), it is
    read again counting `nchar` cells per taxon.
    """
    if not interleave:
        try:
            rows = _read(src, span, ntax, nchar, True, known_taxa, by_line=True)
            if len(rows.names) == ntax:
                _check_complete(src, span, rows.names, rows.cells, ntax, nchar)
                return rows
        except DataError as err:
            if "more rows than ntax" not in err.message and "appears twice" not in err.message:
                raise
    rows = _read(src, span, ntax, nchar, interleave, known_taxa, by_line=False)
    _check_complete(src, span, rows.names, rows.cells, ntax, nchar)
    return rows


def _read(src, span, ntax, nchar, interleave, known_taxa, by_line) -> Rows:
    pos, end = span
    names: list[str] = []
    cells: list[list[str]] = []
    offs: list[list[int]] = []
    index: dict[str, int] = {}
    nrow = 0
    while True:
        pos = skip_blank(src, pos)
        if pos >= end:
            break
        tok, pos = next_token(src, pos)
        assert tok is not None
        name = tok.text
        if interleave and not by_line and nrow >= ntax:
            i = nrow % ntax
            if name != names[i]:
                raise src.error(tok.pos, "expected taxon '%s' in this interleaved block, found '%s'"
                                % (names[i], name), DataError)
        else:
            if name in index:
                raise src.error(tok.pos, "taxon '%s' appears twice in the matrix" % name, DataError)
            if len(names) >= ntax:
                raise src.error(tok.pos, "more rows than ntax=%d (at '%s'); check ntax or the row lengths"
                                % (ntax, name), DataError)
            if known_taxa is not None and name not in known_taxa:
                raise src.error(tok.pos, "taxon '%s' is not in the taxa block" % name, DataError)
            index[name] = len(names)
            names.append(name)
            cells.append([])
            offs.append([])
        i = nrow % ntax if interleave and not by_line else len(names) - 1
        need = None if interleave else nchar
        pos = _read_cells(src, pos, end, need, cells[i], offs[i])
        if len(cells[i]) > nchar:
            raise src.error(offs[i][nchar], "taxon '%s' has more than nchar=%d characters"
                            % (names[i], nchar), DataError)
        nrow += 1
    return Rows(names, cells, offs)


def _check_complete(src, span, names, cells, ntax, nchar) -> None:
    if len(names) != ntax:
        raise src.error(span[1], "the matrix has %d taxa but dimensions say ntax=%d" % (len(names), ntax),
                        DataError)
    for name, row in zip(names, cells):
        if len(row) != nchar:
            raise src.error(span[1], "taxon '%s' has %d characters but dimensions say nchar=%d"
                            % (name, len(row), nchar), DataError)
