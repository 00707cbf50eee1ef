"""Stepping-stone sampling (MrBayes' `ss`): the marginal likelihood from MC3 runs whose likelihood is
raised to a power that steps from near 1 to 0 (or from 0 up, `fromprior=yes`).

The run is an ordinary MC3 (mbgpu.sampler.mc3) of `ngen` generations cut into `nsteps + 1` pieces of
whole samples: the first (`burninss`) is burn-in at step 1's power, then step k samples at power b_k.
Every acceptance and heat swap sees the likelihood at that power (RunOptions.power). After a step's
own burn-in (mcmc's burninfrac of it, or `burnin` samples), each sample of a run's cold chain adds
L^(b' - b_k) to that step's mean, b' being the neighbouring power towards 1; the log of the mean is
the step's contribution, their sum the run's log marginal likelihood (Xie et al. 2011). Powers are
Beta(alpha, 1) quantiles, (k / nsteps)^(1 / alpha). All of this follows MrBayes 3.2.7a's RunChain.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mbgpu.errors import CommandError
from mbgpu.sampler.screen import IND


def beta_quantile(alpha: float, p: float) -> float:
    """The p quantile of Beta(alpha, 1): its CDF is x^alpha."""
    return p ** (1.0 / alpha)


@dataclass(frozen=True)
class SsPlan:
    """An ss run's schedule, in generations (MrBayes' numGenInStepSS and friends)."""

    nsteps: int
    alpha: float
    fromprior: bool
    samplefreq: int
    burnin_samples: int      # burninss resolved: samples before step 1
    step_gens: int           # generations in a step (a multiple of samplefreq)
    step_burnin_gens: int    # generations at a step's start that are not used
    ngen: int                # generations run: burn-in and every step
    requested: int           # mcmc's ngen

    @property
    def burnin_gens(self) -> int:
        return self.burnin_samples * self.samplefreq

    def power(self, step: int) -> float:
        """The power step `step` (1..nsteps) samples at."""
        n = self.nsteps
        return beta_quantile(self.alpha, (step - 1) / n if self.fromprior else (n - step) / n)

    def length(self, step: int) -> float:
        """The power difference step `step`'s samples are raised to (towards the posterior)."""
        n = self.nsteps
        if self.fromprior:
            return beta_quantile(self.alpha, step / n) - self.power(step)
        return beta_quantile(self.alpha, (n - step + 1) / n) - self.power(step)

    def step_of(self, gen: int) -> int:
        """The step generation `gen` (>= 1) belongs to: 1 for the initial burn-in too."""
        return max(1, min(self.nsteps, (gen - self.burnin_gens - 1) // self.step_gens + 1))

    def position(self, gen: int) -> int:
        """Generations from the start of gen's step to gen (1..step_gens; 0 at the end of the burn-in)."""
        return 0 if gen <= self.burnin_gens else (gen - self.burnin_gens - 1) % self.step_gens + 1

    def step_end(self, gen: int) -> bool:
        """True at the last generation of a step."""
        return gen > self.burnin_gens and (gen - self.burnin_gens) % self.step_gens == 0

    def in_sample(self, gen: int) -> bool:
        """True where a sample at `gen` counts towards its step's contribution."""
        return gen > self.burnin_gens and gen % self.samplefreq == 0 and self.position(gen) > self.step_burnin_gens


def plan(mcmc: dict, ss: dict) -> SsPlan:
    """The schedule of `ss` from mcmc's and ss' settings (MrBayes' DoSs and RunChain); CommandError where
    MrBayes refuses the numbers."""
    ngen, freq, nsteps, burnin = mcmc["Ngen"], mcmc["Samplefreq"], ss["Nsteps"], ss["Burninss"]
    if ngen // freq <= burnin:
        raise CommandError("Burnin %d samples is too large compared with requested total %d samples (%d generations)"
                           % (burnin, ngen // freq, ngen))
    if burnin < 0:
        burnin = ngen // ((nsteps - burnin) * freq)
    step = (ngen - burnin * freq) // nsteps
    step = freq * (step // freq)
    if mcmc["Relburnin"] == "Yes":
        step_burnin = int(step * mcmc["Burninfrac"] / freq) * freq
    else:
        step_burnin = mcmc["Burnin"] * freq
    if (step - step_burnin) // freq < 1:
        raise CommandError("There is less then one sample in each step of stepping-stone sampling: adjust burnin, "
                           "the number of generations, the sampling frequency or the number of steps")
    return SsPlan(nsteps, float(ss["Alpha"]), ss["Fromprior"] == "Yes", freq, burnin, step, step_burnin,
                  burnin * freq + nsteps * step, ngen)


def run_options(opts, p: SsPlan):
    """mcmc's RunOptions for an ss run: its generations, relative burn-in for the diagnostics (MrBayes'
    DoSs sets it), the first step's power."""
    return replace(opts, ngen=p.ngen, relburnin=True, power=p.power(1))


def intro_lines(p: SsPlan) -> list[str]:
    """What MrBayes prints before the chain results of an ss run."""
    s = p.samplefreq
    lines = ["", IND + "Starting stepping-stone sampling to estimate marginal likelihood.         ",
             IND + "%d steps will be used with %d generations (%d samples) within each step.  "
             % (p.nsteps, p.step_gens, p.step_gens // s),
             IND + "Total of %d generations (%d samples) will be collected while first        " % (p.ngen, p.ngen // s),
             IND + "%d generations (%d samples) will be discarded as initial burnin.          "
             % (p.burnin_gens, p.burnin_samples),
             IND + "Additionally at the beginning of each step %d generations (%d samples)     "
             % (p.step_burnin_gens, p.step_burnin_gens // s),
             IND + "will be discarded as burnin.  "]
    if p.fromprior:
        lines.append(IND + "Sampling from prior to posterior, i.e. first step samples from prior.   ")
    else:
        lines += [IND + "Sampling from posterior to prior, i.e. first step samples from close to ",
                  IND + "posterior.                                                              "]
    if p.ngen != p.requested:
        lines += [IND + "NOTE: Number of generation of each step is reduced to the closest multi-",
                  IND + "ple of sampling frequency. That is why, in total it will be taken %d    " % p.ngen,
                  IND + "generations instead of requested %d.                                    " % p.requested]
    return lines + ["", ""]


def log_mean_exp(values: list[float]) -> float:
    """log of the mean of exp(values), MrBayes' MeanVarianceLog's mean (the runs' mean estimate)."""
    top = max(values)
    return math.log(sum(math.exp(v - top) for v in values) / len(values)) + top
