"""The `.p` parameter file exactly as MrBayes 3.2.7a writes it: `[ID: n]`, a tab-separated header
`Gen LnL LnPr TL ...`, then one row per sample (no trailing tab).

Numbers follow `set scientific` and `set precision` (default `%.6e`; `scientific=no precision=15`
gives `%.15f`); counts (ints) `%d`.
"""
from __future__ import annotations

from typing import Sequence, TextIO

import numpy as np


def format_number(x: float, scientific: bool, precision: int) -> str:
    """One value as MrBayes prints it in .p files; an int (a count: n_CPP) with `%d`, as MrBayes does."""
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return "%d" % x
    return "%.*e" % (precision, x) if scientific else "%.*f" % (precision, x)


class PFileWriter:
    """Writes the header on creation and one row per `row()` call; the caller owns the stream."""

    def __init__(self, stream: TextIO, run_id: str, columns: Sequence[str], *, scientific: bool = True,
                 precision: int = 6, header: bool = True, labels: Sequence[str] | None = None):
        """`labels`: the header's words where they differ from `columns` (mbgpu.output.paramnames.pfile_header)."""
        self.stream, self.columns = stream, list(columns)
        self.scientific, self.precision = scientific, precision
        if not header:  # continuing a file after a checkpoint
            return
        stream.write("[ID: %s]\n" % run_id)
        stream.write("\t".join(["Gen", "LnL", "LnPr"] + list(self.columns if labels is None else labels)) + "\n")

    def row(self, gen: int, lnl: float, lnpr: float, values: Sequence[float]) -> None:
        assert len(values) == len(self.columns), "row and header must have the same columns"
        nums = [format_number(v, self.scientific, self.precision) for v in (lnl, lnpr, *values)]
        self.stream.write("\t".join([str(gen)] + nums) + "\n")
        self.stream.flush()
