"""The clock model of each tree, built once from the Settings: what the later steps (start state, priors,
moves, output) read instead of the prset dictionaries.

`clock_models(settings)` gives one frozen `ClockModel` per tree (per brlens parameter V, as
`mbgpu.tree_groups` groups the divisions), or None for a tree whose `prset brlenspr` is not a clock.
Everything here is plain data: distributions as `mbgpu.clock.distributions.Distribution` (kind and
parameters the `ln_density` kernel takes), other priors as `ScalarPrior` (MrBayes' family and numbers),
start values as MrBayes 3.2.7a sets them (measured with mb-double: docs/plans/clocks-integration.md,
"Settings (helper clocksettings)"); `None` marks a start value MrBayes draws from the prior at random.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mbgpu.clock.distributions import Distribution, age_distribution, clock_rate_distribution
from mbgpu.errors import NotImplementedYet

TREE_PRIORS = {"Uniform": "uniform", "Birthdeath": "birthdeath", "Coalescence": "coalescence",
               "Fossilization": "fossilization"}
PLOIDY_FACTOR = {"Haploid": 2.0, "Diploid": 4.0, "Zlinked": 3.0}    # theta = factor x N x clockrate


@dataclass(frozen=True)
class ScalarPrior:
    """A prior of one clock parameter as `prset` gave it: MrBayes' family ('Exponential', 'Beta', 'Fixed',
    'Uniform', 'Gamma', 'Lognormal', 'Normal') and its numbers."""

    family: str
    params: tuple

    @property
    def fixed(self) -> bool:
        return self.family == "Fixed"


@dataclass(frozen=True)
class Calibration:
    """`calibrate NAME=dist(...)`: a hard constraint's node (`taxa`: its 0-based taxa) or a tip
    (`taxa`: the one taxon, `tip` True) and the age distribution MrBayes gives it."""

    name: str
    tip: bool
    taxa: frozenset
    dist: Distribution


@dataclass(frozen=True)
class ClockModel:
    """One clock tree's model (MrBayes' modelParams of its first division; the divisions sharing the
    tree agree, checked by `clock_models`)."""

    divisions: tuple[int, ...]          # 1-based divisions on this tree
    tree_prior: str                     # 'uniform' | 'birthdeath' | 'coalescence' | 'fossilization'
    tree_age: Distribution              # treeagepr (uniform, birthdeath, fossilization; unused under coalescence)
    clock_rate: Distribution            # clockratepr
    clock_rate_start: float
    speciation: ScalarPrior             # net_speciation = lambda - mu (birthdeath, fossilization)
    extinction: ScalarPrior             # relative_extinction = mu / lambda
    fossilization: ScalarPrior          # relative_fossilization = psi / (mu + psi)
    sample_prob: float                  # rho
    sample_strat: str                   # 'random' | 'diversity' | 'cluster' | 'fossiltip'
    shift_times: tuple[float, ...]      # fossil-sampling rate-shift times, decreasing (samplestrat s: t1..ts)
    popsize: ScalarPrior                # coalescence
    ploidy: str                         # lset ploidy: 'Haploid' | 'Diploid' | 'Zlinked'
    growth: float                       # coalescent growth rate (MrBayes' growthpr; no 3.2.7a prset here: 0)
    clock_var: str                      # 'strict' | 'cpp' | 'tk02' | 'igr'
    igrvar: ScalarPrior
    tk02var: ScalarPrior
    cpprate: ScalarPrior
    cppmultdev: float                   # sigma of the CPP log rate multipliers (Fixed only)
    calibrated: bool                    # prset nodeagepr=calibrated: the calibrations below are used
    node_calibrations: tuple[Calibration, ...]     # of the constraints the topology prior enforces
    tip_calibrations: tuple[Calibration, ...]

    @property
    def ploidy_factor(self) -> float:
        """theta = factor x popsize x clockrate (LnCoalescencePriorPr)."""
        return PLOIDY_FACTOR[self.ploidy]

    def starts(self) -> dict:
        """MrBayes' start values of the free clock parameters (column label -> value; None: a random
        draw from the prior, which MrBayes makes for uniform variances, uniform popsize and cppRate)."""
        out: dict = {}
        if self.tree_prior in ("birthdeath", "fossilization"):
            out["net_speciation"] = _start_or_fixed(self.speciation, 0.1)
            out["relative_extinction"] = _start_or_fixed(self.extinction, 0.9)
        if self.tree_prior == "fossilization":
            out["relative_fossilization"] = _start_or_fixed(self.fossilization, 0.1)
        if self.tree_prior == "coalescence":
            out["popsize"] = _popsize_start(self.popsize)
        if self.clock_var == "igr":
            out["igrvar"] = _variance_start(self.igrvar, 1.0)
        if self.clock_var == "tk02":
            out["tk02var"] = _variance_start(self.tk02var, 2.0)
        if self.clock_var == "cpp":
            out["cppRate"] = self.cpprate.params[0] if self.cpprate.fixed else None
        out["clockrate"] = self.clock_rate_start
        return out


def _start_or_fixed(prior: ScalarPrior, start: float) -> float:
    """MrBayes starts net_speciation at 0.1, relative_extinction at 0.9 and relative_fossilization at 0.1
    whatever their prior (even outside a uniform's range), unless it is fixed."""
    return float(prior.params[0]) if prior.fixed else start


def _popsize_start(prior: ScalarPrior) -> float | None:
    """Fixed: the value; lognormal: exp(mu); gamma: its mean; normal: mu; uniform: a random draw."""
    p = prior.params
    return {"Fixed": lambda: p[0], "Lognormal": lambda: math.exp(p[0]), "Gamma": lambda: p[0] / p[1],
            "Normal": lambda: p[0]}.get(prior.family, lambda: None)()


def _variance_start(prior: ScalarPrior, scale: float) -> float | None:
    """igrvar starts at 1/lambda, tk02var at 2/lambda under Exponential(lambda); fixed: the value;
    uniform: a random draw."""
    if prior.fixed:
        return float(prior.params[0])
    return scale / prior.params[0] if prior.family == "Exponential" else None


def clock_rate_start(dist: Distribution) -> float:
    """MrBayes' start value of the clock rate: fixed -> it, lognormal(mu,s) -> exp(mu), exponential(l)
    -> 1/l, normal(mu,s) -> mu, gamma(a,b) -> a/b."""
    p = dist.params
    return {"Fixed": lambda: p[0], "Lognormal": lambda: math.exp(p[0]), "Exponential": lambda: 1.0 / p[0],
            "Normal": lambda: p[0], "Gamma": lambda: p[0] / p[1]}[dist.family]()


def _scalar(prior) -> ScalarPrior:
    return ScalarPrior(prior.kind, tuple(float(a) for a in prior.args))


_CLOCK_KEYS = ("Brlenspr", "Treeagepr", "Clockratepr", "Speciationpr", "Extinctionpr", "Fossilizationpr",
               "Sampleprob", "Samplestrat", "Popsizepr", "Nodeagepr", "Clockvarpr", "Igrvarpr", "TK02varpr",
               "Cppratepr", "Cppmultdevpr")


def is_clock(prset) -> bool:
    """Whether a division's `prset brlenspr` is a clock prior."""
    return prset["Brlenspr"].kind == "Clock"


def _enforced(settings, divisions) -> set[str]:
    """The constraints of the tree's `prset topologypr=constraints(...)` (lower case): MrBayes dates only
    those of the calibrated constraints."""
    pr = settings.topology_prior([i - 1 for i in divisions])
    return {str(a).lower() for a in pr.args} if pr is not None and pr.kind == "Constraints" else set()


def model_of(settings, divisions: tuple[int, ...]) -> ClockModel:
    """The ClockModel of the tree of 1-based `divisions` (all clock divisions).

    Raises:
        NotImplementedYet: the divisions sharing the tree differ in a clock setting.
    """
    first = settings.divisions[divisions[0] - 1]
    for i in divisions[1:]:
        d = settings.divisions[i - 1]
        differ = [("prset", k) for k in _CLOCK_KEYS + ("Fossilshifts",) if d.prset.get(k) != first.prset.get(k)]
        differ += [("lset", "Ploidy")] * (d.lset["Ploidy"] != first.lset["Ploidy"])
        if differ:
            raise NotImplementedYet("%s %s differing between divisions %d and %d of one clock tree is not supported "
                                    "yet" % (differ[0][0], differ[0][1].lower(), divisions[0], i))
    pr = first.prset
    rate = clock_rate_distribution(pr["Clockratepr"].kind, pr["Clockratepr"].args)
    calibrated = pr["Nodeagepr"] == "Calibrated"
    enforced = _enforced(settings, divisions)
    cals = tuple(c for c in settings.calibrations.values() if c.tip or c.name.lower() in enforced) if calibrated else ()
    return ClockModel(
        divisions=tuple(divisions), tree_prior=TREE_PRIORS[pr["Brlenspr"].sub.kind],
        tree_age=age_distribution(pr["Treeagepr"].kind, pr["Treeagepr"].args), clock_rate=rate,
        clock_rate_start=clock_rate_start(rate), speciation=_scalar(pr["Speciationpr"]),
        extinction=_scalar(pr["Extinctionpr"]), fossilization=_scalar(pr["Fossilizationpr"]),
        sample_prob=float(pr["Sampleprob"]), sample_strat=pr["Samplestrat"].lower(),
        shift_times=tuple(pr.get("Fossilshifts", ())), popsize=_scalar(pr["Popsizepr"]), ploidy=first.lset["Ploidy"],
        growth=0.0, clock_var=pr["Clockvarpr"].lower(), igrvar=_scalar(pr["Igrvarpr"]),
        tk02var=_scalar(pr["TK02varpr"]), cpprate=_scalar(pr["Cppratepr"]),
        cppmultdev=float(pr["Cppmultdevpr"].args[0]), calibrated=calibrated,
        node_calibrations=tuple(c for c in cals if not c.tip), tip_calibrations=tuple(c for c in cals if c.tip))


def clock_models(settings) -> list[ClockModel | None]:
    """One entry per tree of `mbgpu.tree_groups.tree_groups(settings)`: its ClockModel, or None where the
    tree's branch lengths are unconstrained.

    Raises:
        NotImplementedYet: one tree whose divisions mix clock and unconstrained branch lengths, or differ
            in a clock setting.
    """
    from mbgpu.tree_groups import tree_groups

    out: list[ClockModel | None] = []
    for group in tree_groups(settings).groups:
        kinds = {is_clock(settings.divisions[i - 1].prset) for i in group}
        if len(kinds) > 1:
            raise NotImplementedYet("clock and unconstrained branch lengths on one tree (divisions %s) are not "
                                    "supported yet" % ",".join(map(str, group)))
        out.append(model_of(settings, group) if kinds.pop() else None)
    return out


def clock_setting(settings) -> str | None:
    """The `prset brlenspr=clock:...` of the first clock division as MrBayes writes it (`Clock:Uniform`), or
    None when no division has a clock: what `mcmc`/`ss` refuse until the clock sampler lands."""
    for d in settings.divisions:
        if is_clock(d.prset):
            return "Clock:%s" % d.prset["Brlenspr"].sub.kind
    return None

