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


class _LabelError(DataError):
    """A row label that does not fit (repeated, unknown, out of order, one row too many); while rows
    are read one per line it may only mean that rows wrap over several lines."""


def read_rows(src: Source, span: tuple[int, int], ntax: int, nchar: int, interleave: bool,
              known_taxa: list[str] | None = None, order: list[str] | None = None) -> Rows:
    """Parse the matrix text in `span` into `ntax` rows of `nchar` cells each.

    `known_taxa`: the row labels allowed (any order); `order`: the labels the rows must have, in this
    order (a characters block bound to a taxa block).

    A plain (non-interleaved) matrix is first read one row per line, which locates a row of the
    wrong length exactly; if that does not give `ntax` rows (rows wrapped over several lines), it is
    read again counting `nchar` cells per taxon.
    """
    labels = _Labels(ntax, known_taxa, order)
    if not interleave:
        try:
            rows = _read(src, span, ntax, nchar, True, labels, by_line=True)
            if len(rows.names) == ntax:
                _check_complete(src, span, rows.names, rows.cells, ntax, nchar)
                return rows
        except _LabelError:
            pass
    rows = _read(src, span, ntax, nchar, interleave, labels, by_line=False)
    _check_complete(src, span, rows.names, rows.cells, ntax, nchar)
    return rows


@dataclass
class _Labels:
    """The rules a new row label must follow."""

    ntax: int
    known: list[str] | None
    order: list[str] | None

    def __post_init__(self) -> None:
        allowed = self.order if self.order is not None else self.known
        self._allowed = None if allowed is None else set(allowed)

    def check(self, src: Source, pos: int, name: str, seen: set[str]) -> None:
        """Raise if `name` cannot label the next row (`seen` holds the labels read so far)."""
        if name in seen:
            raise src.error(pos, "taxon '%s' appears twice in the matrix" % name, _LabelError)
        if len(seen) >= self.ntax:
            raise src.error(pos, "more rows than ntax=%d (at '%s'); check ntax or the row lengths"
                            % (self.ntax, name), _LabelError)
        if self._allowed is not None and name not in self._allowed:
            raise src.error(pos, "taxon '%s' is not in the taxa block" % name, _LabelError)
        if self.order is not None and name != self.order[len(seen)]:
            want = self.order[len(seen)]
            raise src.error(pos, "matrix row %d is '%s' but the taxa block has '%s' there: rows must follow "
                            "the taxlabels order (MrBayes 3.2.7a ignores these row labels and would give "
                            "this row's data to '%s')" % (len(seen) + 1, name, want, want), _LabelError)


def _read(src, span, ntax, nchar, interleave, labels: _Labels, by_line) -> Rows:
    pos, end = span
    names: list[str] = []
    cells: list[list[str]] = []
    offs: list[list[int]] = []
    seen: set[str] = set()
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
            labels.check(src, tok.pos, name, seen)
            seen.add(name)
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
