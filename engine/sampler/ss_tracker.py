"""What an ss run does between generations (MC3.stepping): each step's likelihood power, the samples'
contributions to the marginal likelihood, the `.ss` file, the step lines on the screen and the summary,
as MrBayes 3.2.7a's RunChain does them (see mbgpu.sampler.stepping_stone for the method).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.output.linefile import LineFile
from mbgpu.sampler.screen import IND
from mbgpu.sampler.stepping_stone import SsPlan, log_mean_exp
from mbgpu.summary.plots import single_plot

LEGEND = [
    "[LEGEND: The file contains statistics on the Steppingstone Sampling.]",
    "[ID: %s]",
    "[   Step                --  Index of the step ]",
    "[   Power               --  At each step we sample from the distribution with density (Likelihood^Power)*Prior ]",
    "[   runX                --  Contribution to the marginal log likelihood of run X, i.e. marginal log likelihood "
    "for run X is the sum across all steps in column runX.   ]",
]
SPLIT_LEGEND = ("[   %sSplitX             --  %s standard deviation of split frequencies of tree X. -2.0 is printed if "
                "no diagnostics was requested. -1.0 is printed if there were no splits with frequency above minimum.]")


def ss_header(stamp, nruns: int, maxstddev: bool, n_trees: int = 1) -> str:
    """The `.ss` file's legend and column line (MrBayes' words, byte for byte; one split column per
    topology, numbered from 0)."""
    lines = list(LEGEND)
    lines[1] = lines[1] % stamp
    tag, word = ("m", "Maximal") if maxstddev else ("a", "Average")
    lines.append(SPLIT_LEGEND % (tag, word))
    cols = ["Step", "Power"] + ["run%d" % (r + 1) for r in range(nruns)] + ["%sSplit%d" % (tag, k)
                                                                          for k in range(n_trees)]
    return "\n".join(lines + ["\t".join(cols)]) + "\n"


class StepAccumulator:
    """One run's mean of L^length over a step's samples, kept as MrBayes keeps it: a sum of
    exp(lnL length - scaler), the scaler moved up when a term would overflow."""

    def __init__(self, lnl: float, length: float):
        self.length, self.scaler, self.sum, self.count = length, lnl * length, 0.0, 0

    def add(self, lnl: float) -> None:
        x = lnl * self.length
        if x > self.scaler + 200.0:          # MrBayes divides by exp(x - 100 - scaler), which may be inf
            self.sum *= math.exp(self.scaler - (x - 100.0))     # in C (sum becomes 0): the same, no overflow
            self.scaler = x - 100.0
        self.sum += math.exp(x - self.scaler)
        self.count += 1

    def log_mean(self) -> float:
        return math.log(self.sum / self.count) + self.scaler if self.count else -math.inf


class SteppingStone:
    """The ss side of an MC3 run: `begin` before generation 1, `after_sample` at every sampled generation
    (after the diagnostics), `summary_lines` for the end."""

    def __init__(self, plan: SsPlan, nruns: int, stem: str, stamp, console, diagnose: bool, maxstddev: bool,
                 append: bool = False, writer: bool = True, n_trees: int = 1):
        """`stem`: the output stem (the file is STEM.ss); `diagnose`: mcmcdiagn=yes; `append`: a continuation
        (the file, cut back to the checkpoint's offset, is extended; `restore` brings the rest back);
        `writer`: False on the MPI ranks that do not write, which only follow the steps' powers;
        `n_trees`: the topologies (unlink topology), each with its own split statistic."""
        self.plan, self.nruns, self.console, self.stem, self.writer = plan, nruns, console, stem, writer
        path = stem + ".ss"
        self.diag, self.diag_plot, self.maxstddev = diagnose and nruns > 1, diagnose, maxstddev
        self.fh = LineFile(path, "the stepping-stone statistics", append=append) if writer else None
        if writer and not append:
            self.fh.write(ss_header(stamp, nruns, maxstddev, n_trees))
        self.path = path
        self.step = 1
        self.marginal = [0.0] * nruns
        self.n_trees = n_trees
        self.split_stat = [[0.0] * n_trees for _ in range(plan.nsteps)]     # [step][topology]
        self.acc: list[StepAccumulator] = []

    # -- the loop's hooks ------------------------------------------------------------------------------
    def begin(self, mc3) -> None:
        """Step 1's power and accumulators (burn-in runs at step 1's power, as in MrBayes)."""
        p = self.plan
        mc3.opts.power = p.power(1)
        if not self.writer:
            return
        self.acc = [StepAccumulator(mc3.cold(r).lnl, p.length(1)) for r in range(self.nruns)]
        if self.diag and p.burnin_samples == 0:
            _keep_from(mc3.sink, 1)     # MrBayes drops generation 0 from the diagnostics
        if p.burnin_samples == 0:
            self.console.print("")
            self.console.print(IND + "Sampling step 1 out of %d steps..." % p.nsteps)
            self.console.print("")

    def diagnoses(self, gen: int) -> bool:
        """MrBayes also diagnoses at the end of the burn-in and of every step."""
        return gen == self.plan.burnin_gens or self.plan.step_end(gen)

    def shows(self, gen: int) -> bool:
        """The split frequencies are computed and printed only past a step's own burn-in."""
        p = self.plan
        return gen > p.burnin_gens and p.position(gen) > p.step_burnin_gens

    def after_sample(self, gen: int, mc3) -> None:
        p = self.plan
        if not self.writer:
            if p.step_end(gen) and self.step < p.nsteps:
                self.step += 1
                mc3.opts.power = p.power(self.step)
            return
        if p.in_sample(gen):
            for r, a in enumerate(self.acc):
                a.add(mc3.cold(r).lnl)
        if self.diag and gen >= p.burnin_gens and p.position(gen) == p.step_burnin_gens:
            _keep_from(mc3.sink, gen // p.samplefreq + 1)    # the diagnostics see this step only
        if gen == p.burnin_gens and gen > 0:
            self.console.print("")
            self.console.print(IND + "Sampling step 1 out of %d steps..." % p.nsteps)
            self.console.print("")
        elif p.step_end(gen):
            self._end_step(gen, mc3)

    def _end_step(self, gen: int, mc3) -> None:
        """The step's line of the .ss file; the next step's power and accumulators."""
        p, k = self.plan, self.step
        values = [a.log_mean() for a in self.acc]
        split = "".join("\t%.6f" % v if self.diag else "\t-2.0" for v in self.split_stat[k - 1])
        self.fh.write("%3d\t%.4f%s%s\n" % (k, p.power(k), "".join("\t%.6f" % v for v in values), split))
        self.fh.flush()
        for r, v in enumerate(values):
            self.marginal[r] += v
        if k < p.nsteps:
            self.step = k + 1
            mc3.opts.power = p.power(k + 1)
            self.acc = [StepAccumulator(mc3.cold(r).lnl, p.length(k + 1)) for r in range(self.nruns)]
            self.console.print(IND + "Sampling step %d out of %d steps..." % (k + 1, p.nsteps))
            self.console.print("")

    def note_split_stat(self, gen: int, sink) -> None:
        """The step's split-frequency statistic of every topology (-1.0: no split above minpartfreq), for
        the .ss file."""
        if not self.writer:
            return
        values = []
        for counter in sink.tree_splits:
            avg, mx = counter.asdsf()
            values.append(-1.0 if math.isnan(avg) else (mx if self.maxstddev else avg))
        self.split_stat[self.plan.step_of(gen) - 1] = values

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()

    # -- checkpoints -----------------------------------------------------------------------------------
    def output_sizes(self) -> dict[str, int]:
        """Flush and fsync the .ss file; {path: bytes written}."""
        self.fh.sync()
        return {self.path: self.fh.size}

    def capture(self, mc3) -> dict:
        """The step bookkeeping as checkpoint datasets (ss/...): exact, so a continuation writes the same
        .ss lines as an uninterrupted run (MrBayes keeps a step's sum in its .ckp rounded)."""
        first = mc3.sink.splits.first_kept
        return {"ss/step": np.array([self.step], dtype=np.int64),
                "ss/power": np.array([mc3.opts.power], dtype=np.float64),
                "ss/marginal": np.array(self.marginal, dtype=np.float64),
                "ss/split_stat": np.array(self.split_stat, dtype=np.float64),
                "ss/acc": np.array([[a.length, a.scaler, a.sum] for a in self.acc], dtype=np.float64).reshape(-1, 3),
                "ss/acc_count": np.array([a.count for a in self.acc], dtype=np.int64),
                "ss/first_kept": np.array([-1 if first is None else first], dtype=np.int64)}

    def restore(self, mc3, state: dict, where: str) -> None:
        """Put `capture`'s datasets back (CheckpointMismatch when the checkpoint has none)."""
        if "ss/step" not in state:
            raise CheckpointMismatch("checkpoint '%s' holds no stepping-stone state: it was not written by ss"
                                     % where)
        self.step = int(state["ss/step"][0])
        mc3.opts.power = float(state["ss/power"][0])
        self.marginal = [float(v) for v in state["ss/marginal"]]
        stats = np.asarray(state["ss/split_stat"], dtype=np.float64).reshape(self.plan.nsteps, -1)
        self.split_stat = [[float(v) for v in row] for row in stats]
        self.acc = []
        for (length, scaler, total), count in zip(state["ss/acc"].tolist(), state["ss/acc_count"].tolist()):
            a = StepAccumulator(0.0, length)
            a.scaler, a.sum, a.count = scaler, total, int(count)
            self.acc.append(a)
        first = int(state["ss/first_kept"][0])
        _keep_from(mc3.sink, None if first < 0 else first)

    # -- the end ---------------------------------------------------------------------------------------
    def summary_lines(self) -> list[str]:
        """The marginal likelihoods of the runs, their mean, and the plot of the split statistic."""
        p = self.plan
        out = ["", IND + "Marginal likelihood (in natural log units) estimated using stepping-stone sampling based on",
               IND + "%d steps with %d generations (%d samples) within each step. " % (p.nsteps, p.step_gens,
                                                                                     p.step_gens // p.samplefreq),
               "", IND + "    Run   Marginal likelihood (ln)", IND + "    ------------------------------"]
        out += [IND + "    %3d    %9.2f   " % (r + 1, v) for r, v in enumerate(self.marginal)]
        out.append(IND + "    ------------------------------")
        if self.nruns > 1:
            out += [IND + "    Mean:  %9.2f" % log_mean_exp(self.marginal), ""]
        out.append(IND + "More statistics on stepping-stone sampling is dumped to %s.ss file." % self.stem)
        if self.diag_plot:
            out += self._plot_lines()
        return out

    def _plot_lines(self) -> list[str]:
        """The plot of the split statistic over the steps; with several topologies MrBayes titles it
        "Plots ... for different topology" and draws one per topology, each after a "Topology k." line
        (the first on the same line as the legend's end)."""
        word = "max" if self.maxstddev else "average"
        steps = np.arange(1, self.plan.nsteps + 1, dtype=float)
        stats = np.array(self.split_stat)
        legend = ["   Points at -1.0 (y-axis) indicate that there were no splits",
                  "   above minimum frequency for corresponding step."]
        if self.n_trees == 1:
            return (["", "   Plot of %s standard deviation of split frequencies across steps." % word] + legend
                    + single_plot(steps, stats[:, 0])[1:])
        out = ["", "   Plots of %s standard deviation of split frequencies across steps for different topology."
               % word] + legend
        for k in range(self.n_trees):
            title = "      Topology %d." % (k + 1)
            if k == 0:
                out[-1] += title
            else:
                out.append(title)          # the plot before ends with its blank line
            out += single_plot(steps, stats[:, k])
        return out


def _keep_from(sink, first: int | None) -> None:
    """Every topology's split counter keeps samples from `first` on (None: the mcmc burn-in rule)."""
    for counter in sink.tree_splits:
        counter.first_kept = first
