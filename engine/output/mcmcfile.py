"""The `.mcmc` file as MrBayes 3.2.7a writes it: acceptance rates and tunings of every move, swap
acceptance of every chain pair per run, and the standard deviation of split frequencies (average, or
maximum with `diagnstat=maxstddev`), one row per diagnostics generation.

With one run the columns carry no run suffix (`Multiplier(V)$acc`, `Swap(1<>2)$acc`) and there is no
split-frequency column; the bracketed preamble names only the kinds of column the file has.
`allchains=yes`: the moves of every chain (heat), suffixed `_run1_chn2` even with one run;
`allcomps=yes`: after the statistic, the same statistic for every pair of runs (`AvgStdDev(s)(run1_run2)`;
with several topologies after each topology's, `AvgStdDev(s.tree2)(run1_run2)`).
"""
from __future__ import annotations

import math
from typing import TextIO

_GEN = "[   Gen                --  Generation]"
_MOVE = "[   <name1>(<name2>)$acc_run2      --  Acceptance rate of move <name1> changing parameter 1 in run 2]"
_MOVE_ALL = ("[   <name1>(<name2>)$acc_run2_chn3 --  Acceptance rate of move <name1> changing parameter <name2> in run "
             "2, chain 3]")
_SWAP = {True: "[   Swap(1<>2)$acc_run3            --  Acceptance rate of swaps between chains 1 and 2 in run 3]",
         False: "[   Swap(1<>2)$acc                 --  Acceptance rate of swaps between chains 1 and 2]"}
_STAT = {"Avgstddev": ("AvgStdDev(s)", "Average"), "Maxstddev": ("MaxStdDev(s)", "Maximum")}


def column_name(move_name: str) -> str:
    """The move and the first parameter it changes (commas inside a `{1,2}` suffix do not separate).

    >>> column_name("ExtSPR(Tau{all},V{all})"), column_name("Slider(Pi{1,3})"), column_name("NNI(Tau,V)")
    ('ExtSPR(Tau{all})', 'Slider(Pi{1,3})', 'NNI(Tau)')
    """
    head, _, inner = move_name.partition("(")
    if not inner:
        return move_name
    inner, depth = inner[:-1] if inner.endswith(")") else inner, 0
    for i, ch in enumerate(inner):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            inner = inner[:i]
            break
    return "%s(%s)" % (head, inner)


def preamble(nruns: int, nchains: int, diagnstat: str = "Avgstddev", allchains: bool = False,
             allcomps: bool = False, n_trees: int = 1) -> list[str]:
    """The bracketed lines between `[ID: ...]` and the header (several trees: only topology 1's legend,
    as MrBayes writes it)."""
    lines = [_GEN, _MOVE_ALL if allchains else _MOVE]
    if nchains > 1:
        lines.append(_SWAP[nruns > 1])
    if nruns > 1 and allcomps and n_trees > 1:
        lines.append("[   StdDev(s.tree1)(run1-run2)     --  %s standard deviation of split frequencies between runs 1 "
                     "and 2 for topology 1]" % _STAT[diagnstat][1])
    elif nruns > 1 and allcomps:
        lines.append("[   StdDev(s)(run1-run2)           --  %s standard deviation of split frequencies between runs 1 "
                     "and 2]" % _STAT[diagnstat][1])
    elif nruns > 1 and n_trees > 1:
        lines.append("[   StdDev(s.tree1)                --  %s standard deviation of split frequencies for topology 1]"
                     % _STAT[diagnstat][1])
    elif nruns > 1:
        lines.append("[   StdDev(s)                      --  %s standard deviation of split frequencies]"
                     % _STAT[diagnstat][1])
    return lines


def columns(moves_per_run: list[list], nchains: int, diagnstat: str = "Avgstddev", allchains: bool = False,
            allcomps: bool = False, n_trees: int = 1) -> list[str]:
    """The column names: per run its moves (acceptance, then tuning if autotuned) and chain pairs; with
    `allchains` moves_per_run[r] holds the move lists of run r's chains by heat."""
    multi = len(moves_per_run) > 1
    cols = ["Gen"]
    for run, moves in enumerate(moves_per_run, 1):
        groups = moves if allchains else [moves]
        for chain, group in enumerate(groups, 1):
            tail = "_run%d_chn%d" % (run, chain) if allchains else "_run%d" % run if multi else ""
            for m in group:
                cols.append("%s$acc%s" % (column_name(m.name), tail))
                if _tuned(m):
                    cols.append("%s$%s%s" % (column_name(m.name), m.tuning_name, tail))
        cols += ["Swap(%d<>%d)$acc%s" % (i, j, "(%d)" % run if multi else "") for i, j in _pairs(nchains)]
    if multi and n_trees > 1:     # one statistic per topology: AvgStdDev(s.tree1), its pairs, ...
        for k in range(1, n_trees + 1):
            name = "%s.tree%d)" % (_STAT[diagnstat][0][:-1], k)
            cols.append(name)
            if allcomps:
                cols += ["%s(run%d_run%d)" % (name, i, j) for i, j in _pairs(len(moves_per_run))]
    elif multi:
        cols.append(_STAT[diagnstat][0])
        if allcomps:
            cols += ["%s(run%d_run%d)" % (_STAT[diagnstat][0], i, j) for i, j in _pairs(len(moves_per_run))]
    return cols


class McmcFileWriter:
    """Header from the moves of each run's cold chain; rows from the same objects.

    The split-frequency column is there when there are several runs (`with_stddev`); `diagnstat` is
    mcmc's Diagnstat (Avgstddev or Maxstddev) and names it.
    """

    def __init__(self, stream: TextIO, run_id: str, moves_per_run: list[list] | None, nchains: int,
                 with_stddev: bool, *, header: bool = True, diagnstat: str = "Avgstddev", allchains: bool = False,
                 allcomps: bool = False, n_trees: int = 1):
        """`header=False`: continue an existing file (after a checkpoint); `moves_per_run` may then be None.
        `allchains`: moves_per_run[r] is the list of run r's chains' move lists, by heat. `n_trees`: the
        statistic of each topology (`unlink topology`; row() then takes a list)."""
        self.stream, self.nchains, self.with_stddev = stream, nchains, with_stddev
        self.allchains, self.allcomps = allchains, allcomps
        if not header:
            return
        assert with_stddev == (len(moves_per_run) > 1), "MrBayes writes the statistic exactly when nruns > 1"
        lines = ["[ID: %s]" % run_id] + preamble(len(moves_per_run), nchains, diagnstat, allchains, allcomps, n_trees)
        cols = columns(moves_per_run, nchains, diagnstat, allchains, allcomps, n_trees)
        stream.write("\n".join(lines + ["\t".join(cols)]) + "\n")

    def row(self, gen: int, moves_per_run: list[list], swaps_per_run: list, stddev: float | list | None,
            pairs: list[list[float]] | None = None) -> None:
        """One diagnostics row; `stddev` a list with several topologies; `pairs`: for each topology the
        statistic of every pair of runs (allcomps)."""
        out = [str(gen)]
        for moves, swaps in zip(moves_per_run, swaps_per_run):
            for group in moves if self.allchains else [moves]:
                for m in group:
                    rate = m.counts.get("last_rate")
                    out.append("NA" if rate is None else "%f" % rate)
                    if _tuned(m):
                        out.append("%e" % m.tuning)
            for i, j in _pairs(self.nchains):
                tried, acc = swaps.tried[i - 1][j - 1], swaps.accepted[i - 1][j - 1]
                out.append("%f" % (acc / tried) if tried else "NA")
        if self.with_stddev:
            stats = stddev if isinstance(stddev, list) else [stddev]
            n_pairs = len(moves_per_run) * (len(moves_per_run) - 1) // 2
            for k, v in enumerate(stats):
                out.append(_stat(v))
                if self.allcomps:
                    out += [_stat(x) for x in (pairs[k] if pairs is not None else [None] * n_pairs)]
        self.stream.write("\t".join(out) + "\n")
        self.stream.flush()


def _stat(v: float | None) -> str:
    return "NA" if v is None else "-nan" if math.isnan(v) else "%f" % v



def _pairs(nchains: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(1, nchains + 1) for j in range(i + 1, nchains + 1)]


def _tuned(move) -> bool:
    return bool(getattr(move, "autotune", False)) and getattr(move, "tuning_name", None) is not None
