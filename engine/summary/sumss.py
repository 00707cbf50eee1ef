"""The `sumss` command: the stepping-stone estimate recomputed from the `.p` files' LnL column with a
chosen burn-in per step, the step plot and the joined plot, as MrBayes 3.2.7a's DoSumSs.

The `.p` rows are gen 0, the initial burn-in, then `nsteps` steps of equal length; the step schedule
(nsteps, alpha, burninss, fromprior) is ss' current settings, the burn-in within each step mcmc's
(relburnin, burnin, burninfrac: sumss sets them, shared as in MrBayes). Unlike the run, which used every
sample after a step's burn-in as it went, sumss sees only what was written, hence small differences.
"""
from __future__ import annotations

import numpy as np

from mbgpu.errors import InputFileError, Location
from mbgpu.sampler.ss_tracker import StepAccumulator
from mbgpu.sampler.stepping_stone import SsPlan
from mbgpu.summary.common import check_exists, emit, file_stem, run_files
from mbgpu.summary.pfile import read_pfile
from mbgpu.summary.plots import overlay_plot, single_plot

IND = "   "


def step_layout(n_rows: int, nsteps: int, burninss: int, path: str) -> tuple[int, int]:
    """(first row of step 1, rows per step) of a .p file of `n_rows` samples (gen 0 included)."""
    if burninss > 0:
        begin = burninss + 1
    else:
        begin = (n_rows - 1) // (nsteps - burninss) + 1
    per_step, extra = divmod(n_rows - begin, nsteps)
    if extra:
        raise InputFileError("Number of samples could not be evenly divided among steps (%d samples among %d "
                             "steps)" % (n_rows - begin, nsteps), Location(path))
    return begin, per_step


def step_contributions(lnl: np.ndarray, begin: int, per_step: int, burnin: int, plan: SsPlan) -> list[float]:
    """Each step's log mean of L^length over its samples after `burnin` (MrBayes' sumss arithmetic)."""
    out = []
    for k in range(1, plan.nsteps + 1):
        rows = lnl[begin + (k - 1) * per_step + burnin:begin + k * per_step]
        acc = StepAccumulator(float(rows[0]), plan.length(k))
        for v in rows.tolist():
            acc.add(v)
        out.append(acc.log_mean())
    return out


def _schedule(settings) -> SsPlan:
    """The ss settings as an SsPlan (only the step powers are used here)."""
    ss = settings.ss
    return SsPlan(ss["Nsteps"], float(ss["Alpha"]), ss["Fromprior"] == "Yes", 1, 0, 1, 0, 0, 0)


def _table(contrib: list[list[float]], plan: SsPlan, burnin: int, frac: float | None) -> list[str]:
    n = len(contrib)
    lines = ["", "", IND + "Step contribution table.", "", "   Columns in the table: ",
             "   Step -- Index of the step ",
             "   runX -- Contribution to the marginal log likelihood of run X, i.e. marginal ",
             "           log likelihood for run X is the sum across all steps in column runX.", ""]
    if frac is not None:
        lines.append(IND + "The table entrances are based on samples excluding burn-in %d samples  (%d%%)    "
                     % (burnin, int(100 * frac)))
    else:
        lines.append(IND + "The table entrances are based on samples excluding burn-in %d samples      " % burnin)
    lines += [IND + "discarded at the beginning of each step.  ", ""]
    lines.append("   Step" + "".join((" " if j < 9 else "") + "      run%d" % (j + 1) for j in range(n)))
    for k in range(plan.nsteps):
        lines.append("   %3d   " % (k + 1) + "".join(" %10.3f" % c[k] for c in contrib))
    lines.append("         " + "".join(("-" if j < 9 else "") + "----------" for j in range(n)))
    lines.append("   Sum:  " + "".join(" %10.3f" % sum(c) for c in contrib))
    return lines


def _plots(xs: list[np.ndarray], ys: list[np.ndarray]) -> list[str]:
    """One run's plot, or the runs' overlay plot: MrBayes 3.2.7a's DoSumSs follows sump's allruns, never
    set there, not sumss' own (which it reads and ignores), so both values give the overlay plot."""
    return single_plot(xs[0], ys[0]) if len(xs) == 1 else overlay_plot(xs, ys)


def _step_plot(files, params, begin: int, per_step: int, nsteps: int) -> list[str]:
    step, frac = int(params["Steptoplot"]), float(params["Discardfrac"])
    lines = ["", "", IND + "Step plot(s).", ""]
    if step == 0:
        first, count = int(frac * begin), begin - int(frac * begin)
        lines += [IND + "Plotting step 0, i.e initial burn-in phase consisting of %d samples." % begin,
                  IND + "According to 'Discardfrac=%.2f', first %d samples are not ploted." % (frac, first)]
    else:
        if step > nsteps:
            raise InputFileError("Chosen index of step to print %d is out of range of step indices[0,...,%d]"
                                 % (step, nsteps))
        skip = int(frac * per_step)
        first, count = begin + (step - 1) * per_step + skip, per_step - skip
        lines += [IND + "Plotting step %d consisting of %d samples." % (step, per_step),
                  IND + "According to 'Discardfrac=%.2f', first %d samples are not ploted." % (frac, skip)]
    gen = [f.column("Gen")[first:first + count] for f in files]
    lnl = [f.column("LnL")[first:first + count] for f in files]
    return lines + _plots(gen, lnl)


def _joined_plot(files, params, begin: int, per_step: int, burnin: int, nsteps: int) -> list[str]:
    """The sum over steps 1..nsteps-1 (MrBayes leaves the last out) of the i-th sample of each step,
    averaged over +-smoothing neighbours, against i."""
    smooth = int(params["Smoothing"])
    lines = ["", "", IND + "Joined plot(s).", "",
             IND + "Joined plot of %d samples of all steps together. 'smoothing' is set to:%d" % (per_step, smooth),
             IND + "According to step burn-in, first %d samples are not ploted." % burnin]
    xs, ys = [], []
    for f in files:
        lnl = f.column("LnL")
        total = np.zeros(per_step)
        for k in range(nsteps - 1):
            total[burnin:] += lnl[begin + k * per_step + burnin:begin + (k + 1) * per_step]
        y = [float(np.mean(total[max(burnin, j - smooth):min(per_step, j + smooth + 1)]))
             for j in range(burnin, per_step)]
        xs.append(np.arange(burnin + 1, per_step + 1, dtype=float))
        ys.append(np.array(y))
    return lines + _plots(xs, ys)


def run_sumss(settings, console) -> list[float]:
    """The `sumss` command; returns each run's log marginal likelihood (the table's sums)."""
    params, mcmc = settings.sumss, settings.mcmc
    nruns, plan = int(params["Nruns"]), _schedule(settings)
    stem = file_stem(settings, settings.sump)
    paths = run_files(stem, nruns, "p")
    for p in paths:
        check_exists(p)
    files = [read_pfile(p) for p in paths]
    n_rows = files[0].rows.shape[0]
    for f in files[1:]:
        if f.rows.shape != files[0].rows.shape:
            raise InputFileError("First file had %d rows and %d columns while this one had %d rows and %d columns"
                                 % (n_rows, files[0].rows.shape[1], *f.rows.shape), Location(f.path))
    begin, per_step = step_layout(n_rows, plan.nsteps, settings.ss["Burninss"], paths[0])
    relative = mcmc["Relburnin"] == "Yes"
    burnin = int(per_step * mcmc["Burninfrac"]) if relative else int(mcmc["Burnin"])
    if burnin >= per_step:
        raise InputFileError("Burnin in each step(%d) is longer then the step itself(%d)" % (burnin, per_step))
    lines = [IND + ("Summarizing parameters in file %s.p" % stem if nruns == 1 else
                    "Summarizing parameters in files %s.run1.p and %s.run2.p" % (stem, stem) if nruns == 2 else
                    "Summarizing parameters in %d files (%s.run1.p,\n      %s.run2.p, etc)" % (nruns, stem, stem))]
    lines.append(IND + ("Using relative burnin ('relburnin=yes'), discarding the first %.0f %% of samples within "
                        "each step." % (mcmc["Burninfrac"] * 100.0) if relative else
                        "Using absolute burnin ('relburnin=no'), discarding the first %d samples within each step."
                        % burnin))
    lines += [IND + "In total %d sampls are red from .p files." % n_rows, "",
              IND + "Marginal likelihood (in natural log units) is estimated using stepping-stone sampling",
              IND + "based on %d steps with %d samples within each step. " % (plan.nsteps, per_step),
              IND + "First %d samples (including generation 0) are discarded as initial burn-in." % begin,
              IND + "Sampling is assumed have being done from %s." % ("prior to posterior" if plan.fromprior
                                                                      else "posterior to prior")]
    contrib = [step_contributions(f.column("LnL"), begin, per_step, burnin, plan) for f in files]
    lines += _table(contrib, plan, burnin, mcmc["Burninfrac"] if relative else None)
    lines += _step_plot(files, params, begin, per_step, plan.nsteps)
    lines += _joined_plot(files, params, begin, per_step, burnin, plan.nsteps)
    emit(console, "\n".join(lines))
    return [sum(c) for c in contrib]
