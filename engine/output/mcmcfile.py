"""The `.mcmc` file as MrBayes 3.2.7a writes it: acceptance rates and tunings of every move, swap
acceptance of every chain pair per run, and the average standard deviation of split frequencies,
one row per diagnostics generation."""
from __future__ import annotations

from typing import TextIO

_PREAMBLE = """[   Gen                --  Generation]
[   <name1>(<name2>)$acc_run2      --  Acceptance rate of move <name1> changing parameter 1 in run 2]
[   Swap(1<>2)$acc_run3            --  Acceptance rate of swaps between chains 1 and 2 in run 3]
[   StdDev(s)                      --  Average standard deviation of split frequencies]
"""


def column_name(move_name: str) -> str:
    """`ExtSPR(Tau,V)` -> `ExtSPR(Tau)`: the move and the first parameter it changes."""
    head, _, inner = move_name.partition("(")
    return "%s(%s)" % (head, inner.rstrip(")").split(",")[0]) if inner else move_name


class McmcFileWriter:
    """Header from the moves of each run's cold chain; rows from the same objects."""

    def __init__(self, stream: TextIO, run_id: int, moves_per_run: list[list] | None, nchains: int,
                 with_stddev: bool, *, header: bool = True):
        """`header=False`: continue an existing file (after a checkpoint); `moves_per_run` may then be None."""
        self.stream, self.nchains, self.with_stddev = stream, nchains, with_stddev
        if not header:
            return
        cols = ["Gen"]
        for run, moves in enumerate(moves_per_run, 1):
            for m in moves:
                cols.append("%s$acc_run%d" % (column_name(m.name), run))
                if _tuned(m):
                    cols.append("%s$%s_run%d" % (column_name(m.name), m.tuning_name, run))
            cols += ["Swap(%d<>%d)$acc(%d)" % (i, j, run) for i, j in self._pairs()]
        if with_stddev:
            cols.append("StdDev(s)")
        stream.write("[ID: %d]\n%s%s\n" % (run_id, _PREAMBLE, "\t".join(cols)))

    def _pairs(self):
        return [(i, j) for i in range(1, self.nchains + 1) for j in range(i + 1, self.nchains + 1)]

    def row(self, gen: int, moves_per_run: list[list], swaps_per_run: list, stddev: float | None) -> None:
        out = [str(gen)]
        for moves, swaps in zip(moves_per_run, swaps_per_run):
            for m in moves:
                rate = m.counts.get("last_rate")
                out.append("NA" if rate is None else "%f" % rate)
                if _tuned(m):
                    out.append("%e" % m.tuning)
            for i, j in self._pairs():
                tried, acc = swaps.tried[i - 1][j - 1], swaps.accepted[i - 1][j - 1]
                out.append("%f" % (acc / tried) if tried else "NA")
        if self.with_stddev:
            out.append("NA" if stddev is None else "%f" % stddev)
        self.stream.write("\t".join(out) + "\n")
        self.stream.flush()


def _tuned(move) -> bool:
    return bool(getattr(move, "autotune", False)) and getattr(move, "tuning_name", None) is not None
