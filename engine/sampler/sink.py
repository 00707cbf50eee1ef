"""Where a run's samples go: each run's `.p` and `.t` files, the `.mcmc` file, and the split counts
behind the average standard deviation of split frequencies (ASDSF) printed every diagnfreq."""
from __future__ import annotations

import math

from engine.errors import InputFileError, ModelError
from engine.output.mcmcfile import McmcFileWriter
from engine.output.pfile import PFileWriter
from engine.output.tfile import TFileWriter, newick_of
from engine.parameters import column_names, parameter_values
from engine.sampler.screen import IND
from engine.splits import SplitCounter


def _open(path: str):
    try:
        return open(path, "w", encoding="ascii")
    except OSError as exc:
        raise InputFileError("cannot write '%s': %s" % (path, exc.strerror)) from None


class FileSink:
    """Opens every output file at the start; `sample`, `diagnose`, then `close`."""

    def __init__(self, settings, params, stem: str, run_ids: list[int], opts, console):
        self.settings, self.params, self.opts, self.console = settings, params, opts, console
        self.sci = settings.options["Scientific"] == "Yes"
        self.prec = int(settings.options["Precision"])
        n = opts.nruns
        self.paths = [("%s.p" % stem, "%s.t" % stem) if n == 1 else
                      ("%s.run%d.p" % (stem, r + 1), "%s.run%d.t" % (stem, r + 1)) for r in range(n)]
        cols = column_names(settings, params)
        self.files, self.p, self.t = [], [], []
        for r, (pp, tp) in enumerate(self.paths):
            pf, tf = _open(pp), _open(tp)
            self.files += [pf, tf]
            self.p.append(PFileWriter(pf, run_ids[r], cols, scientific=self.sci, precision=self.prec))
            self.t.append(TFileWriter(tf, run_ids[r], settings.matrix.taxa))
        self.mcmc = None
        self.mcmc_path = "%s.mcmc" % stem
        self.run_id = run_ids[0]
        self.splits = SplitCounter(n, settings.matrix.ntax, outgroup=settings.outgroup,
                                   minpartfreq=opts.minpartfreq, relburnin=opts.relburnin,
                                   burninfrac=opts.burninfrac, burnin=opts.burnin)
        self.last_stat = None

    def sample(self, gen: int, mc3) -> None:
        for r in range(self.opts.nruns):
            c = mc3.cold(r)
            values = [c.tree.total_length()] + parameter_values(self.params, c.values)
            if not all(math.isfinite(v) for v in values + [c.lnl, c.lnpr]):
                raise ModelError("run %d reached a non-finite state at generation %d; nothing was written for it"
                                 % (r + 1, gen))
            self.p[r].row(gen, c.lnl, c.lnpr, values)
            self.t[r].tree(gen, newick_of(c.tree, self.sci, self.prec))
            self.splits.add_tree(r, c.tree)

    def diagnose(self, gen: int, mc3):
        stat = None
        if self.opts.nruns > 1:
            avg, mx = self.splits.asdsf()
            stat = 0.0 if math.isnan(avg) else avg
            if self.settings.mcmc.get("Diagnstat") == "Maxstddev":
                stat = mx
                self.console.print("%sMaximum standard deviation of split frequencies: %f" % (IND, stat))
            else:
                self.console.print("%sAverage standard deviation of split frequencies: %f" % (IND, stat))
        if self.mcmc is None:
            fh = _open(self.mcmc_path)
            self.files.append(fh)
            self.mcmc = McmcFileWriter(fh, self.run_id, [mc3.cold(r).moves for r in range(self.opts.nruns)],
                                       self.opts.nchains, self.opts.nruns > 1)
        self.mcmc.row(gen, [mc3.cold(r).moves for r in range(self.opts.nruns)], mc3.swaps, stat)
        self.last_stat = stat
        return stat

    def close(self) -> None:
        for t in self.t:
            t.close()
        for fh in self.files:
            fh.close()
