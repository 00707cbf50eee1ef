"""Metropolis-coupled MCMC: `nruns` runs of `nchains` chains advanced in lockstep, heat swaps,
samples to .p/.t files, diagnostics to the screen and the .mcmc file.

All chains of all runs take one step per generation before any swap, so a batched backend sees one
call per generation. Every chain draws from its own stream (seed, run, chain); swaps from the swap
stream; so output does not depend on how chains are placed on processes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from mbgpu.core.block import BlockRunner
from mbgpu.sampler.batch_step import step_generation
from mbgpu.sampler.screen import (IND, acceptance_table, acceptance_title, best_state_lines, chain_line,
                                  convergence_warning, duration, heat_table, hms, swap_legend, swap_table,
                                  swap_width)
from mbgpu.sampler.swaps import SwapTable, swap_with


@dataclass
class RunOptions:
    """The mcmc settings the loop needs, typed."""

    ngen: int
    nruns: int
    nchains: int
    temp: float
    swapfreq: int
    nswaps: int
    samplefreq: int
    printfreq: int
    diagnfreq: int
    mcmcdiagn: bool
    tunefreq: int
    autotune: bool
    minpartfreq: float
    burninfrac: float
    relburnin: bool
    burnin: int
    stoprule: bool
    stopval: float
    printall: bool = True
    printmax: int = 8
    allchains: bool = False   # acceptance rates of every chain (.mcmc columns, end-of-run tables)
    allcomps: bool = False    # split-frequency deviations of every pair of runs (screen table, .mcmc columns)
    power: float = 1.0    # the likelihood's power in every acceptance: a stepping-stone step's (ss), else 1.0

    @classmethod
    def from_settings(cls, m: dict) -> "RunOptions":
        yes = lambda k: m[k] == "Yes"  # noqa: E731
        return cls(m["Ngen"], m["Nruns"], m["Nchains"], m["Temp"], m["Swapfreq"], m["Nswaps"], m["Samplefreq"],
                   m["Printfreq"], m["Diagnfreq"], yes("Mcmcdiagn"), m["Tunefreq"], yes("Autotune"),
                   m["Minpartfreq"], m["Burninfrac"], yes("Relburnin"), m["Burnin"], yes("Stoprule"), m["Stopval"],
                   yes("Printall") if "Printall" in m else True, int(m.get("Printmax", 8)),
                   m.get("Allchains") == "Yes", m.get("Allcomps") == "Yes")


class MC3:
    """Runs the loop; `sink` receives samples and diagnostics (files), `console` the screen."""

    compiled_blocks = True       # generations between two events may run in one compiled call (core.block)
    reweight = None              # mcmc reweight: mbgpu.sampler.reweight.Reweighting (set_reweighting)
    BLOCK_MAX = 256              # generations in a block at most
    BLOCK_SECONDS = 0.05         # and about this long (or two generations): stop signals are seen between blocks

    def __init__(self, runs: list[list], opts: RunOptions, swap_rng: np.random.Generator, sink, console):
        self.runs, self.opts, self.swap_rng = runs, opts, swap_rng
        self.sink, self.console = sink, console
        self.ranks = [list(range(opts.nchains)) for _ in runs]
        self.swaps = [SwapTable(opts.nchains) for _ in runs]
        self.gen = 0
        self.after_generation = None  # callable(mc3, gen) -> True to stop (checkpoints, stop signals)
        self.hook_every = 0           # after_generation must run at multiples of this (0: at block ends only)
        self.block_len = 8            # the next compiled block's length at most (sized to BLOCK_SECONDS)
        self.stepping = None          # an ss run's mbgpu.sampler.ss_tracker.SteppingStone

    def cold(self, run: int):
        return self.runs[run][self.ranks[run].index(0)]

    def run(self) -> int:
        """Advance to ngen (or until the stop rule fires); returns the last generation."""
        o, start, first = self.opts, time.time(), self.gen
        wall0, cpu0 = int(start), time.process_time()
        if first == 0:  # a continuation (gen > 0, restored from a checkpoint) has sampled it already
            self.sink.sample(0, self)
            self.console.print(chain_line(0, self.runs, self.ranks, None, o.printall, o.printmax))
            if self.stepping is not None:
                self.stepping.begin(self)
        blocks, gen = None, self.gen
        while gen < o.ngen:
            gen += 1
            if blocks is None:                     # None until the core is built; then a runner or False
                blocks = BlockRunner.for_mc3(self)
            last = self._block_end(gen) if blocks else gen
            if last > gen:
                t0 = time.perf_counter()
                done = blocks.run(self, gen, last)
                per_gen = (time.perf_counter() - t0) / (done - gen + 1)
                # at least 2, so that blocks go on and a slow first one (numba compiling) is not final
                self.block_len = max(2, min(self.BLOCK_MAX, int(self.BLOCK_SECONDS / max(per_gen, 1e-9))))
                gen = self.gen = done
                self.after_block(gen)
            else:
                self.gen = gen
                self.step_all()
                if gen % o.swapfreq == 0:
                    self.swap_all()
            if gen % o.samplefreq == 0:
                self.sink.sample(gen, self)
            if gen % o.printfreq == 0:
                left = (time.time() - start) / (gen - first) * (o.ngen - gen)
                self.console.print(chain_line(gen, self.runs, self.ranks, hms(left), o.printall, o.printmax))
            if self.stepping is not None:
                self._stepping(gen)
            elif o.mcmcdiagn and (gen % o.diagnfreq == 0 or gen == o.ngen):
                if self._diagnose(gen):
                    break
            if self.after_generation is not None and self.after_generation(self, gen):
                break
        self.elapsed = time.time() - start
        self.wall_seconds, self.cpu_seconds = int(time.time()) - wall0, time.process_time() - cpu0
        return self.gen

    def _diagnose(self, gen: int) -> bool:
        """Split-frequency diagnostics at every diagnfreq and, as MrBayes does, at the last generation
        (a row that an append=yes continuation drops again: sink.diagnose); True: the stop rule fired."""
        o = self.opts
        if o.nruns > 1:
            self.console.print("")
        stat = self.sink.diagnose(gen, self, kept=gen % o.diagnfreq == 0)
        stop = stat is not None and o.stoprule and stat <= o.stopval
        if o.nruns > 1 and gen < o.ngen - o.printfreq and not stop:
            self.console.print("")
        for line in self.sink.comparison_lines():
            self.console.print(line)
        if stop:
            self.console.print("")
            self.console.print("%sAnalysis stopped because convergence diagnostic hit stop value." % IND)
        return bool(stop)

    def _stepping(self, gen: int) -> None:
        """An ss run's diagnostics (also at its steps' ends; no stop rule) and step bookkeeping."""
        o, ss = self.opts, self.stepping
        if o.mcmcdiagn and (gen % o.diagnfreq == 0 or ss.diagnoses(gen)):
            show = ss.shows(gen)
            if show and o.nruns > 1:
                self.console.print("")
            self.sink.diagnose(gen, self, show=show)
            if show and o.nruns > 1:
                ss.note_split_stat(gen, self.sink)
                if gen < o.ngen - o.printfreq:
                    self.console.print("")
                for line in self.sink.comparison_lines():
                    self.console.print(line)
        if gen % o.samplefreq == 0:
            ss.after_sample(gen, self)

    def _block_end(self, gen: int) -> int:
        """The last generation of a compiled block from `gen`: the first at which the loop has something
        to do (sample, screen line, diagnostic, a due after_generation), at most block_len on (`gen`
        itself: this generation goes alone). after_generation also runs after every block (stop signals)."""
        o = self.opts
        every = [o.samplefreq, o.printfreq] + ([o.diagnfreq] if o.mcmcdiagn else [])
        if self.after_generation is not None and self.hook_every:
            every.append(self.hook_every)
        last = min(o.ngen, gen + self.block_len - 1)
        for f in every:
            last = min(last, -(-gen // f) * f)
        return last

    def held_runs(self) -> list[int] | None:
        """The runs whose chains this process may step in compiled blocks: every run (under MPI: see
        DistributedMC3)."""
        return list(range(len(self.runs)))

    def after_block(self, gen: int) -> None:
        """After a compiled block that ended at `gen` (under MPI: the screen line's scalars)."""

    def step_all(self) -> None:
        """Every chain proposes, batched flushes evaluate the proposals, every chain decides (batch_step)."""
        step_generation(self.runs, self.ranks, self.opts)

    def swap_all(self) -> None:
        """nswaps heat swaps per run, run by run; the swap stream's uniforms drawn in one call (the same
        values as swaps.try_swap's three per swap)."""
        o = self.opts
        if o.nchains < 2:
            return
        draws = self.swap_rng.random(3 * o.nswaps * len(self.runs)).tolist()
        i, took = 0, []
        for r, chains in enumerate(self.runs):
            for _ in range(o.nswaps):
                pair = swap_with(chains, self.ranks[r], o.temp, draws[i:i + 3], self.swaps[r], o.power,
                                 self.reweight) if self.decides(r) else None
                if pair is not None:
                    took.append((r,) + pair)
                i += 3
        if took:
            self.trade_heat_stats(took)

    def decides(self, run: int) -> bool:
        """Whether this process decides run `run`'s swaps (every run here; under MPI see DistributedMC3)."""
        return True

    def trade_heat_stats(self, took: list) -> None:
        """The chains of each accepted swap (run, position a, position b), in order, trade the statistics
        that go with a heat (Chain.trade_heat_stats)."""
        for r, a, b in took:
            self.runs[r][a].trade_heat_stats(self.runs[r][b])

    def set_reweighting(self, reweight) -> None:
        """mcmc reweight: the heated chains' data reweighted (mbgpu.sampler.reweight); every generation is
        stepped by the interpreted step (the compiled core and its blocks hold one set of weights)."""
        self.reweight = reweight
        self.compiled_blocks = False

    cpu_where = ""    # after "seconds of CPU time" (an MPI run: " on processor 0", as MrBayes' MPI build)

    def at_heat(self, run: int, rank: int):
        """The chain of run `run` that has heat rank `rank` now (0: the cold chain)."""
        return self.runs[run][self.ranks[run].index(rank)]

    def summary(self) -> list[str]:
        """MrBayes' end-of-run report: time, best states, acceptance rates (of every chain with
        allchains=yes), swaps, heats."""
        o = self.opts
        lines = ["", "%sAnalysis completed in %s" % (IND, duration(self.wall_seconds)),
                 "%sAnalysis used %.2f seconds of CPU time%s" % (IND, self.cpu_seconds, self.cpu_where)]
        lines += best_state_lines([self.cold(r).best_lnl for r in range(len(self.runs))], o.nchains)
        if self.stepping is not None:
            lines += self.stepping.summary_lines()
        for r in range(len(self.runs)):
            for h in range(o.nchains if o.allchains else 1):
                lines += acceptance_title(r + 1, h, len(self.runs), o.nchains)
                lines += acceptance_table(self.at_heat(r, h).moves, o.tunefreq)
        if o.nchains > 1:
            width = swap_width(self.swaps)
            for r in range(len(self.runs)):
                lines += [""] + swap_table(r + 1, self.swaps[r], o.nchains, len(self.runs), width)
            lines += [""] + swap_legend() + [""] + heat_table(o.nchains, o.temp, self.reweight and self.reweight.scheme) + [""]
        avg = getattr(self.sink, "last_avg", None)
        if self.stepping is None and o.nruns > 1 and o.mcmcdiagn and avg is not None and avg > 0.10:
            lines += [""] + convergence_warning(avg)
        return lines
