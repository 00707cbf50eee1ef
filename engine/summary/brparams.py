"""`sumt savebrparams=yes`: the `.brparams` file of MrBayes 3.2.7a (PrintBrParamsToFile).

One column per partition, `length[i]` for i = 1, 2, ... in sumt's listing order (the root, i = 0, has no
branch), kept while a partition's count over all runs is at least (int)(Minbrparamfreq x trees sampled
per run), stopping at the first that is not. That order is the .parts order for the partitions listed
there and then the unsorted rest, so a small Minbrparamfreq may reach into partitions .parts omits. One
row per sampled tree of each run (run 1 first); row k holds, for each partition, its k-th sampled length
in that run, or NA once the run has no more (MrBayes' layout: a row is not one tree once a partition is
missing from some trees). Clock trees add the columns of the .vstat (`height[i]`, `age[i]`, the root
included; relaxed clocks' `{set}_length[i]`, `{set}_rate[i]`) for the same partitions. No [ID] line; numbers as `set scientific/precision` print them.
"""
from __future__ import annotations

from mbgpu.summary.common import mb_num
from mbgpu.summary.sumt_clock import vstat_rows


def n_columns(parts: list, min_freq: float, per_run: int) -> int:
    """How many partitions (the root included) MrBayes keeps: the leading ones with enough count."""
    least = int(min_freq * per_run)
    k = 0
    while k < len(parts) and parts[k].total >= least:
        k += 1
    return k


def brparams_text(parts: list, min_freq: float, per_run: int, scientific: bool, precision: int,
                  name: str = "length") -> str:
    """The whole file for `parts` in sumt's order (root first), whose `lengths[run]` are the lengths
    in reading order and `count[run]` their number; columns `name[i]` (`length{2}[i]` for tree{2}),
    then for clock trees the .vstat's other rows (heights, ages, relaxed-clock lengths and rates)."""
    kept = parts[:n_columns(parts, min_freq, per_run)]
    clock = bool(kept) and any(getattr(kept[0], "heights", None) or [])
    cols = vstat_rows(kept, name, clock) if kept else []
    rows = ["\t".join(c[0] for c in cols)]
    for run in range(len(parts[0].count)):
        for k in range(per_run):
            rows.append("\t".join(mb_num(v[run][k], scientific, precision) if x.count[run] > k else "NA"
                                  for _, x, v in cols))
    return "".join(r + "\n" for r in rows)
