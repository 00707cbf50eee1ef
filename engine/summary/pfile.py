"""Reader of `.p` parameter files (MrBayes' own and ours): the last header line and the numeric rows.

MrBayes treats the last line with non-numeric tokens as the header and every later line of numbers as
a sample; `[...]` comments are skipped. Burn-in is counted in those sample rows, gen 0 included.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from mbgpu.errors import InputFileError, Location

_NUM = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@dataclass
class PFile:
    """One .p file: `stamp` (the `[ID: ...]` value or ""), `headers`, `rows` float64[n, len(headers)]."""

    path: str
    stamp: str
    headers: list[str]
    rows: np.ndarray
    first_row_line: int

    def column(self, name: str) -> np.ndarray:
        if self.headers.count(name) != 1:
            raise InputFileError("could not find the '%s' column" % name, Location(self.path))
        return self.rows[:, self.headers.index(name)]


def _strip_comments(line: str, depth: int) -> tuple[str, int]:
    out = []
    for ch in line:
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out), depth


def read_pfile(path: str) -> PFile:
    """Read a .p file; raise InputFileError naming the file and line for malformed content."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        raise InputFileError("cannot read parameter file: %s" % exc.strerror, Location(path)) from None
    stamp, depth, header, rows, first = "", 0, None, [], 0
    for num, raw in enumerate(lines, 1):
        m = re.match(r"\s*\[ID:\s*([^\]]*)\]", raw)
        if m and not stamp:
            stamp = m.group(1).strip()
        text, depth = _strip_comments(raw, depth)
        toks = text.split()
        if not toks:
            continue
        if all(_NUM.match(t) for t in toks):
            if header is None:
                raise InputFileError("numbers before the header line", Location(path, num, 1))
            if len(toks) != len(header):
                raise InputFileError("expected %d values but found %d" % (len(header), len(toks)),
                                     Location(path, num, 1))
            if not rows:
                first = num
            rows.append([float(t) for t in toks])
        else:
            header, rows = toks, []
    if depth:
        raise InputFileError("unterminated comment", Location(path))
    if header is None or not rows:
        raise InputFileError("no parameter samples found", Location(path))
    return PFile(path, stamp, header, np.array(rows, dtype=np.float64), first)
