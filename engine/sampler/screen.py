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


def acceptance_title(run: int, heat: int, nruns: int, nchains: int) -> list[str]:
    """The lines before the acceptance table of run `run`'s chain at heat rank `heat` (1-based run), as
    MrBayes 3.2.7a words them: no blank line with one chain per run; a heated chain's has one after."""
    if nchains == 1:
        return [IND + ("Acceptance rates for the moves:" if nruns == 1 else "Acceptance rates for the moves in run %d:"
                       % run)]
    if heat == 0:
        return ["", IND + ('Acceptance rates for the moves in the "cold" chain:' if nruns == 1 else
                           'Acceptance rates for the moves in the "cold" chain of run %d:' % run)]
    where = "chain %d" % (heat + 1) if nruns == 1 else "chain %d of run %d" % (heat + 1, run)
    return ["", IND + "Acceptance rates for the moves in %s (heated):" % where, ""]


def acceptance_table(moves, tunefreq: int) -> list[str]:
    """Each move's acceptance rate over the run and over its last `tunefreq` tries; `NA NA` for a move that
    has not had `tunefreq` tries yet (MrBayes prints a rate only after a first tuning batch)."""
    lines = ["%s   With prob.   (last %d)   chain accepted proposals by move" % (IND, tunefreq)]
    for m in moves:
        c = m.counts
        if c.get("batches", 0) < 1:
            lines.append("%s       NA           NA       %s" % (IND, m.name))
        else:
            lines.append("%s    %6.1f %%     (%3.0f %%)     %s" % (IND, 100.0 * c["accepted"] / c["tried"],
                                                               100.0 * c["last_rate"], m.name))
    return lines


def swap_table(run: int, table, nchains: int, nruns: int, width: int = 6) -> list[str]:
    """One run's "Chain swap information" table in MrBayes' layout: cells `width` wide (swap_width), a
    trailing space."""
    title = "Chain swap information:" if nruns == 1 else "Chain swap information for run %d:" % run
    lines = [IND + title, "", "%s      %s " % (IND, "".join("%*d" % (width, j + 1) for j in range(nchains))),
             "%s     %s" % (IND, "-" * (width * nchains + 2))]
    for i in range(nchains):
        cells = []
        for j in range(nchains):
            if i == j:
                cells.append(" " * width)
            elif i < j:
                t = table.tried[i][j]
                cells.append("%*.2f" % (width, table.accepted[i][j] / t) if t else "%*s" % (width, "NA"))
            else:
                cells.append("%*d" % (width, table.tried[j][i]))
        lines.append("%s%4d |%s " % (IND, i + 1, "".join(cells)))
    return lines


def swap_width(tables) -> int:
    """MrBayes' cell width: two more than the digits of the largest count of attempts, at least 6."""
    most = max((max(row) for t in tables for row in t.tried), default=0)
    return max(6, len(str(most)) + 2)


def swap_legend() -> list[str]:
    return ["%sUpper diagonal: Proportion of successful state exchanges between chains" % IND,
            "%sLower diagonal: Number of attempted state exchanges between chains" % IND]


def best_state_lines(bests: list[float], nchains: int) -> list[str]:
    """MrBayes' "best state" lines: the best lnL each run's cold heat reached."""
    if len(bests) == 1:
        what = "Log likelihood of best state was" if nchains == 1 else \
            'Log likelihood of best state for "cold" chain was'
        return ["%s%s %.2f" % (IND, what, bests[0])]
    what = "Likelihood of best state for run %d was" if nchains == 1 else \
        'Likelihood of best state for "cold" chain of run %d was'
    return ["%s%s %.2f" % (IND, what % (r + 1), b) for r, b in enumerate(bests)]


def duration(seconds: int) -> str:
    """MrBayes' "Analysis completed in ..." wording for whole seconds of wall time."""
    if seconds > 3600:
        return "%d hours %d mins %d seconds" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d mins %d seconds" % (seconds // 60, seconds % 60)
    if seconds > 2:
        return "%d seconds" % seconds
    return "1 second" if seconds >= 1 else "less than 1 second"


def heat_table(nchains: int, temp: float, reweight: tuple | None = None) -> list[str]:
    """MrBayes' chain table; with `reweight` (down, up, increment) its percent columns and increment line."""
    if reweight is not None:
        return _reweighted_heat_table(nchains, temp, reweight)
    lines = ["%sChain information:" % IND, "", "%s  ID -- Heat " % IND, "%s -----------" % IND]
    for i in range(nchains):
        lines.append("%s   %d -- %.2f %s" % (IND, i + 1, heat(i, temp), " (cold chain)" if i == 0 else ""))
    lines += ["", "%sHeat = 1 / (1 + T * (ID - 1))" % IND,
              "%s   (where T = %.2f is the temperature and ID is the chain number)" % (IND, temp)]
    return lines


def _reweighted_heat_table(nchains: int, temp: float, reweight: tuple) -> list[str]:
    """PrintSwapInfo with reweighting: each chain's percentages (0 for the cold chain) and the increment."""
    down, up, increment = reweight
    lines = ["%sChain information:" % IND, "", "%s  ID -- Heat %% Dn %% Up" % IND, "%s ---------------------" % IND]
    for i in range(nchains):
        d, u = (0.0, 0.0) if i == 0 else (down, up)
        lines.append("%s   %d -- %.2f %3.0f%% %3.0f%% %s" % (IND, i + 1, heat(i, temp), d, u,
                                                         "(cold chain)" if i == 0 else ""))
    lines += ["", "%sHeat = 1 / (1 + T * (ID - 1))" % IND,
              "%s   (where T = %.2f is the temperature and ID is the chain number)" % (IND, temp),
              "%sReweighting increment = %.2f" % (IND, increment)]
    return lines


def comparison_table(pairs, nruns: int, maximum: bool, topology: int | None = None) -> list[str]:
    """allcomps=yes: the statistic of every pair of runs above the diagonal and their qualifying splits
    below it (splits.SplitCounter.pairwise), then a blank line, as MrBayes' PrintTopConvInfo; with several
    topologies one table each, headed `in topology k` with MrBayes' 0-based k."""
    cell = {(i, j): (avg, mx, n) for i, j, avg, mx, n in pairs}
    lines = ["%sPairwise %s standard deviation of split frequencies%s (upper triangle)"
             % (IND, "maximum" if maximum else "average", "" if topology is None else " in topology %d" % topology),
             "%s   and number of qualifying splits for each comparison (lower triangle):" % IND, "",
             "%s      %s " % (IND, "".join("%7d" % (j + 1) for j in range(nruns))),
             "%s     %s" % (IND, "-" * (7 * nruns + 2))]
    for i in range(nruns):
        cells = []
        for j in range(nruns):
            if i == j:
                cells.append("       ")
            elif i < j:
                avg, mx, _ = cell[(i, j)]
                cells.append("%7.3f" % (mx if maximum else avg))
            else:
                cells.append("%7d" % cell[(j, i)][2])
        lines.append("%s%4d |%s " % (IND, i + 1, "".join(cells)))
    return lines + [""]


def convergence_warning(avg: float) -> list[str]:
    """MrBayes' warning after a run whose last average standard deviation of split frequencies exceeds
    0.10 (the average even with diagnstat=maxstddev)."""
    return [IND + "************************* WARNING!! ************************************  ",
            IND + "MrBayes suspects that your runs have not converged because the tree       ",
            IND + "samples are very different (average standard deviation of split frequen-  ",
            IND + "cies larger than 0.10 (%1.2f)). MrBayes suggests that you run the ana-   " % avg,
            IND + "lysis longer or try to improve the MCMC sampling efficiency by fine-      ",
            IND + "tuning MCMC proposal or heating parameters.                               "]
