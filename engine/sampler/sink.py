"""Where a run's samples go: each run's `.p` and `.t` files, the `.mcmc` file, and the split counts
behind the average standard deviation of split frequencies (ASDSF) printed every diagnfreq."""
from __future__ import annotations

import math
import os

from mbgpu.errors import ModelError
from mbgpu.analysis import division_pattern_sets
from mbgpu.model_settings import build_division_models, rate_multipliers
from mbgpu.output.linefile import LineFile
from mbgpu.output.site_reports import SiteReports
from mbgpu.output.mcmcfile import McmcFileWriter
from mbgpu.output.pfile import PFileWriter
from mbgpu.output.tfile import TFileWriter, newick_of
from mbgpu.output.paramnames import pfile_columns
from mbgpu.output.write_failure import OutputWriteFailed
from mbgpu.parameters import parameter_values
from mbgpu.sampler.screen import IND, comparison_table
from mbgpu.splits import SplitCounter


def site_reports(settings, params) -> SiteReports | None:
    """`report siterates=yes` / `ancstates=yes`: what computes their columns (None: not asked for)."""
    if not SiteReports.wanted(settings):
        return None
    sets = division_pattern_sets(settings)
    return SiteReports(settings, params, sets, build_division_models(settings, sets), rate_multipliers(settings))


def _open(path: str, what: str, mode: str = "w") -> LineFile:
    """`path` for writing whole lines (mode "w") or appending them ("a"); `what` names it in errors."""
    return LineFile(path, what, append=mode == "a")


def output_paths(stem: str, nruns: int) -> list[str]:
    """Every file a run writes, in a fixed order: each run's .p and .t, then the .mcmc file."""
    pairs = [("%s.p" % stem, "%s.t" % stem) if nruns == 1 else
             ("%s.run%d.p" % (stem, r + 1), "%s.run%d.t" % (stem, r + 1)) for r in range(nruns)]
    return [p for pair in pairs for p in pair] + ["%s.mcmc" % stem]


class FileSink:
    """Opens every output file at the start; `sample`, `diagnose`, then `close`.

    With `append=True` (a continuation from a checkpoint) the files, already truncated to the
    checkpoint's offsets, are opened for appending and no headers are written.
    """

    def __init__(self, settings, params, stem: str, run_ids: list[int], opts, console, append: bool = False):
        self.settings, self.params, self.opts, self.console = settings, params, opts, console
        self.sci = settings.options["Scientific"] == "Yes"
        self.prec = int(settings.options["Precision"])
        self.order_taxa = settings.mcmc.get("Ordertaxa", "No") == "Yes"
        n = opts.nruns
        names = output_paths(stem, n)
        self.paths = [(names[2 * r], names[2 * r + 1]) for r in range(n)]
        self.reports = site_reports(settings, params)
        cols = pfile_columns(settings, params) + (self.reports.columns if self.reports is not None else [])
        mode, head = ("a", False) if append else ("w", True)
        self.files, self.p, self.t = [], [], []
        for r, (pp, tp) in enumerate(self.paths):
            pf = _open(pp, "the parameter samples of run %d" % (r + 1), mode)
            tf = _open(tp, "the tree samples of run %d" % (r + 1), mode)
            self.files += [pf, tf]
            self.p.append(PFileWriter(pf, run_ids[r], cols, scientific=self.sci, precision=self.prec, header=head))
            self.t.append(TFileWriter(tf, run_ids[r], settings.matrix.taxa, header=head))
        self.mcmc = None
        self.mcmc_path = names[-1]
        self.run_id = run_ids[0]
        if append and os.path.exists(self.mcmc_path):
            self._open_mcmc(None, "a")
        self.splits = SplitCounter(n, settings.matrix.ntax, outgroup=settings.outgroup,
                                   minpartfreq=opts.minpartfreq, relburnin=opts.relburnin,
                                   burninfrac=opts.burninfrac, burnin=opts.burnin)
        self.last_stat = None
        self.last_avg = None       # the average standard deviation of the last diagnostics
        self.last_pairs = None     # allcomps: SplitCounter.pairwise of the last diagnostics
        self.no_splits = False

    def sample(self, gen: int, mc3) -> None:
        for r in range(self.opts.nruns):
            c = mc3.cold(r)
            values = [c.tree.total_length()] + parameter_values(self.params, c.values)
            if self.reports is not None:
                values += self.reports.values(c.tree, c.values)
            if not all(math.isfinite(v) for v in values + [c.lnl, c.lnpr]):
                raise ModelError("run %d reached a non-finite state at generation %d; nothing was written for it"
                                 % (r + 1, gen))
            self.p[r].row(gen, c.lnl, c.lnpr, values)
            self.t[r].tree(gen, newick_of(c.tree, self.sci, self.prec, self.settings.outgroup, self.order_taxa))
            self.splits.add_tree(r, c.tree)

    def diagnose(self, gen: int, mc3, show: bool = True):
        """The split-frequency statistic on the screen and a .mcmc row; show=False (an ss step's burn-in):
        the row repeats the last statistic, as MrBayes' does."""
        stat, o = None, self.opts
        if o.nruns > 1 and not show:
            stat = self.last_stat if self.last_stat is not None else 0.0
        elif o.nruns > 1:
            stat = self._split_stat()
            if o.allcomps:
                self.last_pairs = self.splits.pairwise()
        if self.mcmc is None:
            self._open_mcmc(mc3, "w")
        pairs = None
        if o.allcomps and self.last_pairs is not None:
            pairs = [p[3] if self._maximum() else p[2] for p in self.last_pairs]
        self.mcmc.row(gen, self._moves(mc3), mc3.swaps, stat, pairs)
        self.last_stat = stat
        return None if self.no_splits else stat

    def comparison_lines(self) -> list[str]:
        """allcomps=yes: the table of the last diagnostics' statistic for every pair of runs (screen)."""
        if not self.opts.allcomps or self.last_pairs is None:
            return []
        return comparison_table(self.last_pairs, self.opts.nruns, self._maximum())

    def _maximum(self) -> bool:
        return self.settings.mcmc.get("Diagnstat") == "Maxstddev"

    def _moves(self, mc3) -> list:
        """The moves the .mcmc file reports: each run's cold chain's, or (allchains) every chain's by heat."""
        if self.opts.allchains:
            return [[mc3.at_heat(r, h).moves for h in range(self.opts.nchains)] for r in range(self.opts.nruns)]
        return [mc3.cold(r).moves for r in range(self.opts.nruns)]

    def _split_stat(self) -> float:
        """The statistic diagnstat names, printed as MrBayes does. Where no split reaches minpartfreq
        MrBayes prints NA (for either statistic), writes the average as -nan and the maximum as 0, and
        its stop rule does not fire: `no_splits` says so."""
        avg, mx = self.splits.asdsf()
        self.no_splits = math.isnan(avg)
        self.last_avg = avg           # the run's end warns above 0.10 (whichever statistic diagnstat names)
        maximum = self._maximum()
        stat = mx if maximum else avg
        if self.no_splits:
            self.console.print("%sAverage standard deviation of split frequencies: NA (no splits above min. "
                               "frequency)" % IND)
        else:
            self.console.print("%s%s standard deviation of split frequencies: %f"
                               % (IND, "Max" if maximum else "Average", stat))
        return stat

    def _open_mcmc(self, mc3, mode: str) -> None:
        fh = _open(self.mcmc_path, "the move acceptance rates", mode)
        self.files.append(fh)
        moves = self._moves(mc3) if mc3 is not None else None
        self.mcmc = McmcFileWriter(fh, self.run_id, moves, self.opts.nchains, self.opts.nruns > 1, header=mode == "w",
                                   diagnstat=self.settings.mcmc.get("Diagnstat", "Avgstddev"),
                                   allchains=self.opts.allchains, allcomps=self.opts.allcomps)

    def output_sizes(self) -> dict[str, int]:
        """Flush and fsync every output file; {path: bytes written} (-1: not created yet)."""
        sizes = {}
        for fh in self.files:
            fh.sync()
            sizes[fh.name] = fh.size
        return {p: sizes.get(p, -1) for pair in self.paths for p in pair} | {self.mcmc_path: sizes.get(self.mcmc_path, -1)}

    def close(self) -> None:
        """Write each .t file's `end;` and close every file; after a failed write only close them (the
        failure is the error the run reports; a continuation truncates to the checkpoint anyway)."""
        try:
            if not any(fh.failed for fh in self.files):
                for t in self.t:
                    t.close()
        finally:
            _close_all(self.files)


def _close_all(files: list[LineFile]) -> None:
    """Close every file, then raise the first write failure their last flushes met."""
    failures = []
    for fh in files:
        try:
            fh.close()
        except OutputWriteFailed as err:
            failures.append(err)
    if failures:
        raise failures[0]
