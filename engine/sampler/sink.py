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
from mbgpu.output import report_formats
from mbgpu.clock.model import clock_models
from mbgpu.output.clock_trees import branch_set_name, clock_pfile_values, clock_tree_text, prints_clock_rate
from mbgpu.output.paramnames import clock_pfile_header, pfile_header
from mbgpu.output.write_failure import OutputWriteFailed
from mbgpu.parameters import parameter_values
from mbgpu.sampler.screen import IND, comparison_table
from mbgpu.splits import SplitCounter
from mbgpu.tree_groups import TreeGroups, tree_groups


def site_reports(settings, params) -> SiteReports | None:
    """`report siterates=yes` / `ancstates=yes`: what computes their columns (None: not asked for)."""
    if not SiteReports.wanted(settings):
        return None
    sets = division_pattern_sets(settings)
    return SiteReports(settings, params, sets, build_division_models(settings, sets), rate_multipliers(settings))


def _open(path: str, what: str, mode: str = "w") -> LineFile:
    """`path` for writing whole lines (mode "w") or appending them ("a"); `what` names it in errors."""
    return LineFile(path, what, append=mode == "a")


def run_paths(stem: str, nruns: int, trees=None) -> list[list[str]]:
    """Each run's files: its .p, then the .t of each tree (`trees`: mbgpu.tree_groups.TreeGroups; None:
    one tree), named as MrBayes names them."""
    trees = trees if trees is not None else TreeGroups(((1,),), 1)
    return [["%s%s.p" % (stem, ".run%d" % (r + 1) if nruns > 1 else "")] +
            [trees.tree_file(stem, k, r, nruns) for k in range(len(trees))] for r in range(nruns)]


def output_paths(stem: str, nruns: int, trees=None) -> list[str]:
    """Every file a run writes, in a fixed order: each run's .p and .t files, then the .mcmc file."""
    return [p for run in run_paths(stem, nruns, trees) for p in run] + ["%s.mcmc" % stem]


class FileSink:
    """Opens every output file at the start; `sample`, `diagnose`, then `close`.

    With `append=True` (a continuation from a checkpoint) the files, already truncated to the
    checkpoint's offsets, are opened for appending and no headers are written.
    """

    def __init__(self, settings, params, stem: str, run_ids: list[str], opts, console, append: bool = False):
        self.settings, self.params, self.opts, self.console = settings, params, opts, console
        self.sci = settings.options["Scientific"] == "Yes"
        self.prec = int(settings.options["Precision"])
        self.order_taxa = settings.mcmc.get("Ordertaxa", "No") == "Yes"
        n = opts.nruns
        self.trees = tree_groups(settings)
        self.paths = run_paths(stem, n, self.trees)
        self.reports = site_reports(settings, params)
        self.formats = report_formats.formats(settings, params)
        extra = self.reports.columns if self.reports is not None else []
        self.clocks = clock_models(settings)
        self.clock = self.clocks[0] if len(self.clocks) == 1 else None
        labels = (clock_pfile_header(settings, params, self.clocks) if self.clock else pfile_header(settings, params))
        labels += extra
        cols = [c for c in labels if c]
        mode, head = ("a", False) if append else ("w", True)
        self.files, self.p, self.t = [], [], []     # self.t: each run's writers, one per tree
        several = len(self.trees) > 1
        for r, (pp, *tps) in enumerate(self.paths):
            pf = _open(pp, "the parameter samples of run %d" % (r + 1), mode)
            self.files.append(pf)
            self.p.append(PFileWriter(pf, run_ids[r], cols, scientific=self.sci, precision=self.prec, header=head,
                                         labels=labels))
            self.t.append([])
            for k, tp in enumerate(tps):
                tf = _open(tp, "the tree samples of run %d" % (r + 1) + (" (tree %d)" % (k + 1) if several else ""),
                           mode)
                self.files.append(tf)
                self.t[r].append(TFileWriter(tf, run_ids[r], settings.matrix.taxa, header=head,
                                             param=self.trees.param_name(k)))    # tree{all}: partitioned
        self.mcmc = None
        self.mcmc_kept = None      # .mcmc bytes an append=yes continuation keeps (None: all; diagnose)
        self.mcmc_path = "%s.mcmc" % stem
        self.run_id = run_ids[0]
        if append and os.path.exists(self.mcmc_path):
            self._open_mcmc(None, "a")
        self.tree_splits = [SplitCounter(n, settings.matrix.ntax, outgroup=settings.outgroup,
                                         minpartfreq=opts.minpartfreq, relburnin=opts.relburnin,
                                         burninfrac=opts.burninfrac, burnin=opts.burnin)
                            for _ in range(self.trees.n_topologies)]     # one per topology
        self.splits = self.tree_splits[0]
        self.last_stat = None
        self.last_avg = None       # the average standard deviation of the last diagnostics
        self.last_pairs = None     # allcomps: each topology's SplitCounter.pairwise of the last diagnostics
        self.no_splits = False

    def sample(self, gen: int, mc3) -> None:
        for r in range(self.opts.nruns):
            c = mc3.cold(r)
            trees = c.trees
            values = parameter_values(self.params, c.values, self.formats)
            if self.clock is not None:
                head, tail = _clock_values(trees[0])
                values = head + values + tail
            else:
                values = [t.total_length() for t in trees] + values
            if self.reports is not None:
                values += self.reports.values(lambda d: trees[self.trees.of_division(d)], c.values)
            if not all(math.isfinite(v) for v in values + [c.lnl, c.lnpr]):
                raise ModelError("run %d reached a non-finite state at generation %d; nothing was written for it"
                                 % (r + 1, gen))
            self.p[r].row(gen, c.lnl, c.lnpr, values)
            for writer, tree in zip(self.t[r], trees):
                if self.clock is not None:
                    writer.clock_tree(gen, _clock_text(tree, self.sci, self.prec, len(self.settings.divisions)))
                else:
                    writer.tree(gen, newick_of(tree, self.sci, self.prec, self.settings.outgroup, self.order_taxa))
            for counter, k in zip(self.tree_splits, self.trees.firsts()):
                counter.add_tree(r, trees[k])

    def diagnose(self, gen: int, mc3, show: bool = True, kept: bool = True):
        """The split-frequency statistic on the screen and a .mcmc row; show=False (an ss step's burn-in):
        the row repeats the last statistic, as MrBayes' does. kept=False (the last generation, off the
        diagnfreq cycle): MrBayes' append=yes drops that row, so checkpoints record the size before it."""
        stat, o = None, self.opts
        if o.nruns > 1 and not show:
            stat = self.last_stat if self.last_stat is not None else 0.0
        elif o.nruns > 1:
            stat = self._split_stat()
            if o.allcomps:
                self.last_pairs = [counter.pairwise() for counter in self.tree_splits]
        if self.mcmc is None:
            self._open_mcmc(mc3, "w")
        pairs = None
        if o.allcomps and self.last_pairs is not None:
            pairs = [[p[3] if self._maximum() else p[2] for p in per_tree] for per_tree in self.last_pairs]
        self.mcmc_kept = None
        if not kept:
            self.mcmc.stream.flush()
            self.mcmc_kept = self.mcmc.stream.size
        self.mcmc.row(gen, self._moves(mc3), mc3.swaps, stat, pairs)
        self.last_stat = stat
        return None if self.no_splits else self.stop_stat(stat)

    def comparison_lines(self) -> list[str]:
        """allcomps=yes: the table of the last diagnostics' statistic for every pair of runs (screen)."""
        if not self.opts.allcomps or self.last_pairs is None:
            return []
        several = len(self.last_pairs) > 1
        return [line for k, pairs in enumerate(self.last_pairs)
                for line in comparison_table(pairs, self.opts.nruns, self._maximum(), k if several else None)]

    def _maximum(self) -> bool:
        return self.settings.mcmc.get("Diagnstat") == "Maxstddev"

    def _moves(self, mc3) -> list:
        """The moves the .mcmc file reports: each run's cold chain's, or (allchains) every chain's by heat."""
        if self.opts.allchains:
            return [[mc3.at_heat(r, h).moves for h in range(self.opts.nchains)] for r in range(self.opts.nruns)]
        return [mc3.cold(r).moves for r in range(self.opts.nruns)]

    def _split_stat(self):
        """The statistic diagnstat names, printed as MrBayes does (with several trees, one line and one
        value per topology: a list). Where no split reaches minpartfreq MrBayes prints NA (for either
        statistic), writes the average as -nan and the maximum as 0, and its stop rule does not fire:
        `no_splits` says so."""
        several = len(self.tree_splits) > 1
        stats, avgs = [], []
        for k, counter in enumerate(self.tree_splits, 1):
            avg, mx = counter.asdsf()
            topology = " for topology %d" % k if several else ""
            stat = mx if self._maximum() else avg
            if math.isnan(avg):
                self.console.print("%sAverage standard deviation of split frequencies%s: NA (no splits above min. "
                                   "frequency)" % (IND, topology))
            else:
                self.console.print("%s%s standard deviation of split frequencies%s: %f"
                                   % (IND, "Max" if self._maximum() else "Average", topology, stat))
            stats.append(stat)
            avgs.append(avg)
        self.no_splits = any(math.isnan(a) for a in avgs)
        self.last_avg = max(avgs)     # the run's end warns above 0.10 (the largest over the topologies)
        return stats if several else stats[0]

    def stop_stat(self, stat):
        """The value the stop rule compares with stopval: the largest topology's (it stops only when
        every tree's statistic is below stopval)."""
        return max(stat) if isinstance(stat, list) else stat

    def _open_mcmc(self, mc3, mode: str) -> None:
        fh = _open(self.mcmc_path, "the move acceptance rates", mode)
        self.files.append(fh)
        moves = self._moves(mc3) if mc3 is not None else None
        self.mcmc = McmcFileWriter(fh, self.run_id, moves, self.opts.nchains, self.opts.nruns > 1, header=mode == "w",
                                   diagnstat=self.settings.mcmc.get("Diagnstat", "Avgstddev"),
                                   allchains=self.opts.allchains, allcomps=self.opts.allcomps,
                                   n_trees=self.trees.n_topologies)

    def output_sizes(self) -> dict[str, int]:
        """Flush and fsync every output file; {path: bytes written} (-1: not created yet)."""
        sizes = {}
        for fh in self.files:
            fh.sync()
            sizes[fh.name] = fh.size
        mcmc = sizes.get(self.mcmc_path, -1) if self.mcmc_kept is None else self.mcmc_kept
        return {p: sizes.get(p, -1) for run in self.paths for p in run} | {self.mcmc_path: mcmc}

    def close(self) -> None:
        """Write each .t file's `end;` and close every file; after a failed write only close them (the
        failure is the error the run reports; a continuation truncates to the checkpoint anyway)."""
        try:
            if not any(fh.failed for fh in self.files):
                for t in (w for run in self.t for w in run):
                    t.close()
        finally:
            _close_all(self.files)


def _clock_values(tree) -> tuple[list, list]:
    """The `.p` values of a ClockTree before and after the substitution parameters' (TH TL ...; clock ones)."""
    st = tree.state
    return clock_pfile_values(tree.frame.model, st.parent, st.kids, st.depth, st.n_tips, tree.values(),
                              lengths=st.brlen, n_events=_events(tree))


def _events(tree):
    """The CPP events per branch (None without a compound Poisson clock)."""
    return tree.relaxed.n_events if tree.relaxed is not None and tree.relaxed.kind == "cpp" else None


def _clock_text(tree, scientific: bool, precision: int, n_divisions: int) -> str:
    """A ClockTree's `.t` text, children in MrBayes' left/right where known (mbgpu.clock.chain_tree), with
    the relaxed clock's effective lengths."""
    st, model = tree.state, tree.frame.model
    kids = st.written_kids if st.written_kids is not None else st.kids
    rate = st.clock_rate if prints_clock_rate(model) else None
    return clock_tree_text(st.parent, kids, st.depth, st.n_tips, lengths=st.brlen, clock_rate=rate,
                           branch_set=branch_set_name(model, n_divisions), eff=tree.eff, n_events=_events(tree),
                           scientific=scientific, precision=precision)


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
