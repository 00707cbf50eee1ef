"""Screen output of a run in MrBayes' layout: chain lines, diagnostics, the final summaries."""
from __future__ import annotations

from mbgpu.sampler.swaps import heat

IND = "      "


def chain_line(gen: int, runs, ranks, remaining: str | None, printall: bool = True, printmax: int = 8) -> str:
    """`  1000 -- (-6032.117) [-5990.218] ... * [...] -- 0:00:09` as MrBayes 3.2.7a's PrintToScreen
    writes it: the cold chain in brackets; with `printall=no` only the cold chain of each run, with its
    position (`[-5990.218][2] .. `); at most `printmax` chains, then `.. `; `* ` between runs while
    fewer than printmax - 1 chains are printed; one chain in all: its lnL alone."""
    chains = [(c, rk[i] == 0, i) for cs, rk in zip(runs, ranks) for i, c in enumerate(cs)]
    nchains = len(runs[0]) if runs else 1
    out = []
    if len(chains) == 1:
        out.append("%.3f " % chains[0][0].lnl)
    shown = 0
    for k, (c, cold, pos) in enumerate(chains if len(chains) > 1 else []):
        if shown >= printmax:
            if shown == printmax:
                out.append(".. ")
            shown += 1
            continue
        if nchains == 1:
            out.append("%.3f " % c.lnl)
            shown += 1
        elif cold:
            out.append("[%.3f] " % c.lnl if printall else "[%.3f][%d] .. " % (c.lnl, pos + 1))
            shown += 1
        elif printall:
            out.append("(%.3f) " % c.lnl)
            shown += 1
        if k < len(chains) - 1 and (k // nchains) != ((k + 1) // nchains) and shown < printmax - 1:
            out.append("* ")
    line = "%s%5d -- %s" % (IND, gen, "".join(out))
    return line + ("-- %s" % remaining if remaining is not None else "")


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
