"""`sump`: summary of the .p files exactly as MrBayes 3.2.7a prints it and writes .pstat and .lstat."""
from __future__ import annotations

import math

import numpy as np

from mbgpu.diagnostics import ess, mean_variance, psrf
from mbgpu.errors import InputFileError, Location
from mbgpu.output.write_failure import write_text_whole
from mbgpu.summary.common import (Burnin, burnin_of, c_fixed, check_exists, emit, file_stem, mb_num,
                                   number_format, output_stem, run_files, session_stamp)
from mbgpu.summary.pfile import read_pfile
from mbgpu.summary.plots import overlay_plot, plot_header, single_plot

_SKIP = ("Gen", "LnL", "LnPr")
_MODEL_INDICATORS = ("aamodel", "gtrsubmodel")


def hpd_median(values, hpd: bool = True) -> tuple[float, float, float]:
    """MrBayes' LowerUpperMedianHPD (shortest window of round(0.95 n) values) or LowerUpperMedian."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    n = v.size
    if not hpd:
        return float(v[int(0.025 * n)]), float(v[int(0.975 * n)]), float(v[n // 2])
    width = int(n * 0.95 + 0.5)
    start, interval = 0, v[width - 1] - v[0]
    for i in range(1, n - width):
        if v[i + width] - v[i] < interval:
            interval, start = v[i + width] - v[i], i
    return float(v[start]), float(v[start + width - 1]), float(v[n // 2])


def log_means(lnl) -> tuple[float, float, bool]:
    """MrBayes' HarmonicArithmeticMeanOnLogs: (arithmetic mean, harmonic mean, reliable)."""
    x = np.asarray(lnl, dtype=np.float64)
    reliable = True
    out = []
    for sign in (1.0, -1.0):
        scaler, a, n = sign * float(x[-1]), 0.0, 0.0
        for v in x:
            y = sign * float(v) - scaler
            if y > 400.0:
                if y > 5000.0:
                    reliable = False
                    continue
                a /= _c_exp(y - 100.0)   # C's exp: inf past the range, so a becomes 0
                scaler += y - 100.0
                y = 100.0
            a = math.exp(y) if n < 0.5 else a + math.exp(y)
            n += 1.0
        out.append(sign * ((math.log(a / n) if a > 0.0 else -math.inf) + scaler))
    return out[0], out[1], reliable


def _c_exp(z: float) -> float:
    """exp with C's overflow behaviour (inf instead of Python's OverflowError)."""
    return math.exp(z) if z < 709.0 else math.inf


def param_stats(runs: list[np.ndarray], hpd: bool) -> dict:
    """Mean, variance, interval, median, min/avg ESS, PSRF of one column over runs (GetSummary)."""
    mean, var = mean_variance(np.concatenate(runs))
    lower, upper, median = hpd_median(np.concatenate(runs), hpd)
    esses = [ess(r) for r in runs]
    return dict(mean=mean, var=var, lower=lower, upper=upper, median=median, min_ess=min(esses),
                avg_ess=sum(esses) / len(esses), psrf=psrf(runs) if len(runs) > 1 else float("nan"))


def load_runs(paths: list[str], burnin: Burnin):
    """Read every run's .p file, drop burn-in rows; all files must have the same shape and headers."""
    files = []
    for p in paths:
        check_exists(p)
        files.append(read_pfile(p))
    first = files[0]
    for f in files[1:]:
        if f.rows.shape != first.rows.shape:
            raise InputFileError("first file had %d rows and %d columns while this file has %d rows and "
                                 "%d columns" % (*first.rows.shape, *f.rows.shape), Location(f.path))
        if f.headers != first.headers:
            raise InputFileError("headers differ from those of %s" % first.path, Location(f.path))
    drop = burnin.discard(first.rows.shape[0])
    if drop >= first.rows.shape[0]:
        raise InputFileError("the burn-in (%d) leaves no samples of the %d in the file"
                             % (drop, first.rows.shape[0]), Location(first.path))
    return files, drop


def _table_lines(headers, runs_by_col, hpd, sci, prec, nruns):
    names = [h for h in headers if h not in _SKIP and not h.lower().startswith(_MODEL_INDICATORS)]
    longest = max([9] + [len(h) for h in names])
    scr = ["", "%*c                             95%% HPD Interval" % (longest + 3, " ") if hpd else
           "%*c                            95%% Cred. Interval" % (longest + 3, " "),
           "%*c                           --------------------" % (longest + 3, " ")]
    pad = " " * max(1, longest - 9)  # C's %*c prints the character even at width 0
    scr.append("   Parameter" + pad + "     Mean      Variance     Lower       Upper       Median" +
               ("    min ESS*  avg ESS    PSRF+ " if nruns > 1 else "     ESS*"))
    rule = "   " + "-" * (longest + 1) + "-" * 69 + ("-" * 19 if nruns > 1 else "")
    scr.append(rule)
    pst = ["Parameter\tMean\tVariance\tLower\tUpper\tMedian\t" + ("minESS\tavgESS\tPSRF" if nruns > 1 else "ESS")]
    for name in names:
        st = param_stats(runs_by_col[name], hpd)
        line = "   %-*s %10.6f  %10.6f  %10.6f  %10.6f  %10.6f" % (
            longest, name, st["mean"], st["var"], st["lower"], st["upper"], st["median"])
        row = name + "".join("\t" + mb_num(st[k], sci, prec) for k in ("mean", "var", "lower", "upper", "median"))
        ok = st["min_ess"] == st["min_ess"]
        line += "  %8.2f" % st["min_ess"] if ok else "       NA "
        row += "\t" + mb_num(st["min_ess"], sci, prec) if ok else "NA"
        if nruns > 1:
            line += "  " + c_fixed(st["avg_ess"], 8, 2) if ok else "       NA "  # -nan: a run's ESS is 0/0
            row += "\t" + mb_num(st["avg_ess"], sci, prec) if ok else "NA"
            good = st["psrf"] == st["psrf"]
            line += "  %7.3f" % st["psrf"] if good else "     NA   "
            row += "\t" + mb_num(st["psrf"], sci, prec) if good else "NA"
        scr.append(line)
        pst.append(row)
    scr.append(rule)
    return scr, pst


def _lstat(runs_lnl, stem, out, stamp, sci, prec):
    """Marginal-likelihood screen table and the .lstat rows (per run, then 'all' over runs)."""
    nruns = len(runs_lnl)
    scr, rows, any_bad = [""], [], False
    if nruns == 1:
        scr += ['   Estimated marginal likelihoods for run sampled in file "%s.p":' % stem,
                "      (Use the harmonic mean for Bayes factor comparisons of models)",
                "      (Values are saved to the file %s.lstat)" % out, "",
                "   Arithmetic mean   Harmonic mean", "   --------------------------------"]
    else:
        scr += ["   Estimated marginal likelihoods for runs sampled in files",
                ('      "%s.run1.p", "%s.run2.p", etc:' if nruns > 2 else '      "%s.run1.p" and "%s.run2.p":')
                % (stem, stem),
                "      (Use the harmonic mean for Bayes factor comparisons of models)", "",
                "      (Values are saved to the file %s.lstat)" % out, "",
                "   Run   Arithmetic mean   Harmonic mean", "   --------------------------------------"]
    for k, lnl in enumerate(runs_lnl):
        am, hm, ok = log_means(lnl)
        any_bad |= not ok
        star = "  " if ok else " *"
        if nruns == 1:
            scr.append("     %9.2f%s      %9.2f%s" % (am, star, hm, star.rstrip()))
            rows.append("%s\t%s\t%s" % (mb_num(am, sci, prec), mb_num(hm, sci, prec), "no" if ok else "yes"))
        else:
            scr.append("   %3d     %9.2f%s      %9.2f%s" % (k + 1, am, star, hm, star.rstrip()))
            rows.append("%d\t%s\t%s\t%s" % (k + 1, mb_num(am, sci, prec), mb_num(hm, sci, prec),
                                             "no" if ok else "yes"))
    if nruns == 1:
        scr.append("   --------------------------------")
    else:
        am, hm, ok = log_means(np.concatenate(runs_lnl))
        any_bad |= not ok
        scr += ["   --------------------------------------",
                "   TOTAL   %9.2f%s      %9.2f%s" % (am, "  " if ok else " *", hm, "" if ok else " *"),
                "   --------------------------------------"]
        rows.append("all\t%s\t%s\t%s" % (mb_num(am, sci, prec), mb_num(hm, sci, prec), "no" if ok else "yes"))
    scr += ["   * These estimates may be unreliable because ", "     some extreme values were excluded", ""] \
        if any_bad else [""]
    head = "arithmetic_mean\tharmonic_mean\tvalues_discarded" if nruns == 1 else \
        "run\tarithmetic_mean\tharmonic_mean\tvalues_discarded"
    text = ("[ID: %s]\n" % stamp if len(stamp) > 1 else "") + head + "\n" + "".join(r + "\n" for r in rows)
    return scr, text


def run_sump(settings, console) -> dict:
    """The `sump` command: print MrBayes' summary, write `<out>.pstat` and `<out>.lstat`.

    Returns the per-parameter statistics (name -> dict) so the caller and tests can use them.
    """
    params = dict(getattr(settings, "sump", None) or {})
    nruns = int(params.get("Nruns", 2))
    stem = file_stem(settings, params)
    out = output_stem(settings, params, stem)
    burnin, hpd = burnin_of(params), str(params.get("Hpd", "Yes")).lower().startswith("y")
    sci, prec = number_format(settings)
    paths = run_files(stem, nruns, "p")
    lines = ["   Summarizing parameters in file %s.p" % stem if nruns == 1 else
             "   Summarizing parameters in files %s.run1.p and %s.run2.p" % (stem, stem) if nruns == 2 else
             "   Summarizing parameters in %d files (%s.run1.p,\n      %s.run2.p, etc)" % (nruns, stem, stem),
             "   Writing summary statistics to file %s.pstat" % stem, "   " + burnin.describe("samples")]
    files, drop = load_runs(paths, burnin)
    stamp = session_stamp(settings)
    headers = files[0].headers
    kept = [f.rows[drop:] for f in files]
    n_rows, total = kept[0].shape[0], files[0].rows.shape[0]
    for name in ("Gen", "LnL"):
        files[0].column(name)
    gen, lnl = headers.index("Gen"), headers.index("LnL")
    lines += plot_header(nruns)
    if nruns > 1:
        lines += overlay_plot([k[:, gen] for k in kept], [k[:, lnl] for k in kept])
    else:
        lines += single_plot(kept[0][:, gen], kept[0][:, lnl])
    scr, lstat = _lstat([k[:, lnl] for k in kept], stem, out, stamp, sci, prec)
    lines += scr
    _write(out + ".lstat", lstat)
    lines.append("")
    if nruns == 1:
        lines += ['   Model parameter summaries for run sampled in file "%s":' % stem,
                  "      Based on a total of %d samples out of a total of %d samples" % (n_rows, total),
                  "         from this analysis."]
    else:
        lines += (["   Model parameter summaries over the runs sampled in files",
                   '      "%s.run1.p" and "%s.run2.p":' % (stem, stem)] if nruns == 2 else
                  ["   Model parameter summaries over all %d runs sampled in files" % nruns,
                   '      "%s.run1.p", "%s.run2.p" etc:' % (stem, stem)])
        lines += ["      Summaries are based on a total of %d samples from %d runs." % (nruns * n_rows, nruns),
                  "      Each run produced %d samples of which %d samples were included." % (total, n_rows)]
    lines.append('      Parameter summaries saved to file "%s.pstat".' % out)
    by_col = {h: [k[:, i] for k in kept] for i, h in enumerate(headers)}
    scr, pst = _table_lines(headers, by_col, hpd, sci, prec, nruns)
    lines += scr
    lines += (["   * Convergence diagnostic (ESS = Estimated Sample Size); min and avg values",
               "     correspond to minimal and average ESS among runs. ",
               "     ESS value below 100 may indicate that the parameter is undersampled. ",
               "   + Convergence diagnostic (PSRF = Potential Scale Reduction Factor; Gelman",
               "     and Rubin, 1992) should approach 1.0 as runs converge."] if nruns > 1 else
              ["   * Convergence diagnostic (ESS = Estimated Sample Size); ESS value ",
               "     below 100 may indicate that the parameter is undersampled. "]) + ["", ""]
    _write(out + ".pstat", ("[ID: %s]\n" % stamp if len(stamp) > 1 else "") + "".join(r + "\n" for r in pst))
    emit(console, "\n".join(lines))
    names = [h for h in headers if h not in _SKIP and not h.lower().startswith(_MODEL_INDICATORS)]
    return {h: param_stats(by_col[h], hpd) for h in names}


def _write(path: str, text: str) -> None:
    write_text_whole(path, text, "the summary file")
