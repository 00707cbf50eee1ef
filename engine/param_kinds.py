"""The one table of MrBayes' model parameter kinds, and of the amino-acid models `aamodelpr` can fix.

Each kind's facts (its words in the commands and the output, the ModelSpec field it fills, how many
values it holds and where they start, how its values are shown and given a prior, its moves) live
here once; mbgpu.parameters, the output, the sampler and the priors look them up by kind. Plain data
only (no numpy), so the command table can import it cheaply.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

# A kind's form: how its values are held, written to the `.p` file and given a prior.
SIMPLEX = "simplex"          # proportions (any scale): written normalised, Dirichlet prior
RATIO = "ratio"              # kappa held as the pair (k/(1+k), 1/(1+k)): written as k, Beta prior
SCALAR = "scalar"            # one value: exponential or uniform prior
MULTIPLIERS = "multipliers"  # one rate multiplier per division: Dirichlet on the character-weighted values


@dataclass(frozen=True)
class Move:
    """One of MrBayes' default moves of a kind: printed `HEAD(Title{divisions})`, run as mbgpu's `kind`
    (mbgpu.sampler.param_moves) with its relative weight and start tuning value."""

    head: str
    kind: str
    weight: float
    tuning: float
    tuning_name: str          # 'alpha' | 'delta' | 'lambda' (the .mcmc column suffix)


@dataclass(frozen=True)
class KindText:
    """What MrBayes writes about a parameter type in its model summary (ShowParameters)."""

    kind: str                 # mbgpu's key ('shape')
    name: str                 # MrBayes' word: link/unlink's option and the Active-parameters row
    title: str                # the summary's parameter name and the moves' ('Alpha')
    type_name: str            # the summary's `Type = ...`
    prset: str                # the prset option holding its prior


@dataclass(frozen=True)
class ParamKind(KindText):
    """A model parameter kind: the above, plus what a free parameter of it is in a chain."""

    field: str | None         # the ModelSpec field it fills (None: applied outside the spec)
    column: str               # `.p` label; its %s: one per state, two per nucleotide pair; %d: a division
    n_values: int | None      # values held (None: one per state, or per division for MULTIPLIERS)
    start: float | None       # MrBayes' start value of each (None: equal proportions, 1/n)
    form: str                 # SIMPLEX, RATIO, SCALAR or MULTIPLIERS
    moves: tuple[Move, ...]
    bounds: tuple[float, float] = (1e-5, 100.0)   # the values' range for the multiplier move


def _dirichlet_slider(delta: float, weight: float = 0.5, alpha: float = 100.0) -> tuple[Move, ...]:
    return (Move("Dirichlet", "dirichlet", weight, alpha, "alpha"), Move("Slider", "slider", weight, delta, "delta"))


#: the model parameters in MrBayes' order of types (its `.p` columns and its summary)
PARAMS = (
    ParamKind("tratio", "Tratio", "Tratio", "Transition and transversion rates", "Tratiopr",
              "kappa", "kappa", 2, None, RATIO, (Move("Dirichlet", "dirichlet", 1.0, 50.0, "alpha"),)),
    ParamKind("revmat", "Revmat", "Revmat", "Rates of reversible rate matrix", "Revmatpr",
              "revmat", "r(%s<->%s)", 6, None, SIMPLEX, _dirichlet_slider(0.15)),
    ParamKind("statefreq", "Statefreq", "Pi", "Stationary state frequencies", "Statefreqpr",
              "statefreqs", "pi(%s)", None, None, SIMPLEX, _dirichlet_slider(0.20)),
    ParamKind("shape", "Shape", "Alpha", "Shape of scaled gamma distribution of site rates", "Shapepr",
              "alpha", "alpha", 1, 1.0, SCALAR, (Move("Multiplier", "multiplier", 1.0, 2.0 * math.log(1.5), "lambda"),),
              bounds=(1e-5, 200.0)),
    ParamKind("pinvar", "Pinvar", "Pinvar", "Proportion of invariable sites", "Pinvarpr",
              "pinvar", "pinvar", 1, 0.0, SCALAR, (Move("Slider", "pinvar_slider", 1.0, 0.1, "delta"),)),
    ParamKind("ratemult", "Ratemultiplier", "Ratemultiplier", "Partition-specific rate multiplier", "Ratepr",
              None, "m{%d}", None, 1.0, MULTIPLIERS, _dirichlet_slider(0.05, weight=0.75, alpha=50.0)),
)
#: the tree's parameters, last in MrBayes' summary
TREE = (KindText("topology", "Topology", "Tau", "Topology", "Topologypr"),
        KindText("brlens", "Brlens", "V", "Branch lengths", "Brlenspr"))
KIND = MappingProxyType({k.kind: k for k in PARAMS + TREE})


@dataclass(frozen=True)
class ClockKind(KindText):
    """A parameter of a clock tree: MrBayes' words and its `.p` label ('' where it has no column: fixed
    only, or written per branch in the .t file). Start values depend on the prior: mbgpu.clock.model."""

    column: str
    applies: str              # when MrBayes has it: a tree prior ('birthdeath fossilization'), a clockvarpr, 'all'


#: a clock tree's own parameters in MrBayes' order of types (its summary's Active parameters table); their
#: `.p` columns come after the substitution parameters in this order, but for n_CPP and prop_ancfossil,
#: which MrBayes writes right after TL (`clock_pfile_header`)
CLOCK = (
    ClockKind("net_speciation", "Speciationrate", "Net_speciation", "Speciation rate", "Speciationpr",
              "net_speciation", "birthdeath fossilization"),
    ClockKind("relative_extinction", "Extinctionrate", "Relative_extinction", "Extinction rate", "Extinctionpr",
              "relative_extinction", "birthdeath fossilization"),
    ClockKind("relative_fossilization", "Fossilizationrate", "Relative_fossilization", "Fossilization rate",
              "Fossilizationpr", "relative_fossilization", "fossilization"),
    ClockKind("popsize", "Popsize", "Popsize", "Coalescent process population size parameter", "Popsizepr",
              "popsize", "coalescence"),
    ClockKind("growth", "Growthrate", "R_pop", "Population growth rate", "", "", "coalescence"),
    ClockKind("cppmultdev", "Cppmultdev", "Sigma_cpp", "Standard deviation (log) of CPP rate multipliers",
              "Cppmultdevpr", "", "cpp"),
    ClockKind("cpprate", "Cpprate", "Lambda_cpp", "Rate of rate-multiplying compound Poisson process",
              "Cppratepr", "cppRate", "cpp"),
    ClockKind("cppevents", "Cppevents", "CppEvents", "Events of rate-multiplying compound Poisson process", "",
              "n_CPP", "cpp"),
    ClockKind("tk02var", "TK02var", "TK02var", "Variance of lognormal distribution of branch rates", "TK02varpr",
              "tk02var", "tk02"),
    ClockKind("tk02rates", "TK02branchrates", "TK02Brlens", "Branch rates of TK02 relaxed clock", "", "", "tk02"),
    ClockKind("igrvar", "Igrvar", "Igrvar", "Variance increase of igr model branch lenths", "Igrvarpr", "igrvar",
              "igr"),
    ClockKind("igrrates", "Igrbranchrates", "IgrBrlens", "Branch lengths of IGR relaxed clock", "", "", "igr"),
    ClockKind("clockrate", "Clockrate", "Clockrate", "Base rate of clock", "Clockratepr", "clockrate", "all"),
)
CLOCK_KIND = MappingProxyType({k.kind: k for k in CLOCK})

#: the models `prset aamodelpr=fixed(NAME)` names (MrBayes spells them capitalised: Poisson, ..., Lg)
AA_MODELS = ("poisson", "jones", "dayhoff", "mtrev", "mtmam", "wag", "rtrev", "cprev", "vt", "blosum", "lg",
             "equalin", "gtr")
