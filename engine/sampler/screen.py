"""Screen output of a run in MrBayes' layout: chain lines, diagnostics, the final summaries."""
from __future__ import annotations

from mbgpu.sampler.swaps import heat

IND = "      "


def chain_line(gen: int, runs, ranks, remaining: str | None) -> str:
    """`  1000 -- (-6032.117) [-5990.218] ... * [...] -- 0:00:09`; the cold chain in brackets."""
    parts = []
    for chains, rk in zip(runs, ranks):
        parts.append(" ".join(("[%.3f]" if rk[i] == 0 else "(%.3f)") % c.lnl for i, c in enumerate(chains)))
    line = "%s%5d -- %s" % (IND, gen, " * ".join(parts))
    return line + (" -- %s" % remaining if remaining is not None else " ")


def hms(seconds: float) -> str:
    s = int(round(max(seconds, 0.0)))
    return "%d:%02d:%02d" % (s // 3600, (s % 3600) // 60, s % 60)


def acceptance_table(run: int, moves) -> list[str]:
    lines = ['%sAcceptance rates for the moves in the "cold" chain of run %d:' % (IND, run),
             "%s   With prob.   (last 100)   chain accepted proposals by move" % IND]
    for m in moves:
        c = m.counts
        if not c["tried"]:
            lines.append("%s      NA           NA       %s" % (IND, m.name))
            continue
        last = c.get("last_rate")
        last_txt = "(%3d %%)" % round(100 * last) if last is not None else "( NA  )"
        lines.append("%s     %5.1f %%     %s     %s" % (IND, 100.0 * c["accepted"] / c["tried"], last_txt, m.name))
    return lines


def swap_table(run: int, table, nchains: int) -> list[str]:
    head = "".join("%6d" % (j + 1) for j in range(nchains))
    lines = ["%sChain swap information for run %d:" % (IND, run), "%s       %s " % (IND, head),
             "%s     %s" % (IND, "-" * (6 * nchains + 2))]
    for i in range(nchains):
        cells = []
        for j in range(nchains):
            if i == j:
                cells.append("      ")
            elif i < j:
                t = table.tried[i][j]
                cells.append("  %4.2f" % (table.accepted[i][j] / t) if t else "    NA")
            else:
                cells.append("%6d" % table.tried[j][i])
        lines.append("%s   %d |%s" % (IND, i + 1, "".join(cells)))
    lines += ["", "%sUpper diagonal: Proportion of successful state exchanges between chains" % IND,
              "%sLower diagonal: Number of attempted state exchanges between chains" % IND]
    return lines


def heat_table(nchains: int, temp: float) -> list[str]:
    lines = ["%sChain information:" % IND, "", "%s  ID -- Heat " % IND, "%s -----------" % IND]
    for i in range(nchains):
        lines.append("%s   %d -- %.2f %s" % (IND, i + 1, heat(i, temp), " (cold chain)" if i == 0 else ""))
    lines += ["", "%sHeat = 1 / (1 + T * (ID - 1))" % IND,
              "%s   (where T = %.2f is the temperature and ID is the chain number)" % (IND, temp)]
    return lines
