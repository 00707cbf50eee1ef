"""Checks of `prset` prior values, made when the command is read, as MrBayes 3.2.7a makes them.

Each prior family takes a fixed number of arguments, each in an interval: rates, shapes and standard
deviations are > 0, proportions lie in [0, 1], a uniform's lower bound is below its upper bound,
fixed frequencies sum to 1. `check_prior` raises a CommandError whose one-line message names the
parameter, echoes the value and says what is wrong. Counts that depend on a division's datatype (4 or
20 state frequencies) are checked when the model is built (`mbgpu.model_settings`).

>>> from mbgpu.commands.params import parse_prior_text
>>> check_prior("Shapepr", parse_prior_text("Exponential(2)"))
>>> check_prior("Shapepr", parse_prior_text("Exponential(0)"))
Traceback (most recent call last):
mbgpu.errors.CommandError: shapepr=Exponential(0): the rate must be > 0, not 0
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mbgpu.errors import CommandError

INF = math.inf


@dataclass(frozen=True)
class Arg:
    """One numeric argument: its name in messages and the interval it must lie in (`ends` says
    which ends are closed: "()", "[)", "(]" or "[]"; an infinite end is allowed only when closed)."""

    name: str
    lo: float = -INF
    hi: float = INF
    ends: str = "()"

    def problem(self, x) -> str | None:
        if isinstance(x, str):
            return "the %s must be a number, not '%s'" % (self.name, x)
        low_ok = x >= self.lo if self.ends[0] == "[" else x > self.lo
        high_ok = x <= self.hi if self.ends[1] == "]" else x < self.hi
        if low_ok and high_ok:
            return None
        return "the %s must be %s, not %s" % (self.name, self.interval(), _fmt(x))

    def interval(self) -> str:
        if self.lo == self.hi:
            return "= %s" % _fmt(self.lo)
        if self.hi == INF:
            return (">= %s" if self.ends[0] == "[" else "> %s") % _fmt(self.lo)
        if self.lo == -INF:
            return ("<= %s" if self.ends[1] == "]" else "< %s") % _fmt(self.hi)
        return "in %s%s, %s%s" % (self.ends[0], _fmt(self.lo), _fmt(self.hi), self.ends[1])


def _fmt(x: float) -> str:
    return "infinity" if x == INF else "%g" % x


def pos(name: str) -> Arg:
    return Arg(name, 0.0, INF, "()")


def nonneg(name: str) -> Arg:
    return Arg(name, 0.0, INF, "[)")


def real(name: str) -> Arg:
    return Arg(name)


NAME = "name"                  # one word: a tree, a model name
NAMES = "names"                # one word or more: constraints
VALUES = "values"              # Dirichlet: positive values, as many as _DIRICHLET_COUNTS says
FREQUENCIES = "frequencies"    # fixed(equal|empirical) or frequencies that sum to 1
NONE = ()                      # no arguments
UNIFORM = (nonneg("lower bound"), pos("upper bound"))

# family -> its arguments, for every parameter unless _SPECIAL says otherwise
_FAMILY = {
    "Beta": (pos("first shape"), pos("second shape")),
    "Exponential": (pos("rate"),),
    "Uniform": UNIFORM,
    "Gamma": (pos("shape"), pos("rate")),
    "Lognormal": (real("mean (log scale)"), pos("standard deviation")),
    "Normal": (real("mean"), pos("standard deviation")),
    "Truncatednormal": (nonneg("offset"), real("mean"), pos("standard deviation")),
    "Offsetlognormal": (nonneg("offset"), real("mean (log scale)"), pos("standard deviation")),
    "Offsetgamma": (nonneg("offset"), pos("shape"), pos("rate")),
    "Offsetexponential": (nonneg("offset"), pos("mean")),
    "GammaDir": (pos("aT"), pos("bT"), pos("a"), pos("c")),
    "invGamDir": (Arg("aT", 2.0, INF, "()"), pos("bT"), pos("a"), pos("c")),
    "twoExp": (pos("terminal rate"), pos("internal rate")),
    "Dirichlet": VALUES, "Constraints": NAMES,
    "Mixed": NONE, "Variable": NONE, "Speciestree": NONE, "Unconstrained": NONE, "Clock": NONE,
    "Birthdeath": NONE, "Coalescence": NONE, "Fossilization": NONE,
}

# (parameter, family) -> arguments where they differ from _FAMILY; a brlenspr sub is "Head:Sub"
_SPECIAL = {
    ("Pinvarpr", "Uniform"): (Arg("lower bound", 0.0, 1.0, "[)"), Arg("upper bound", 0.0, 1.0, "(]")),
    ("Ratecorrpr", "Uniform"): (Arg("lower bound", -1.0, 1.0, "[)"), Arg("upper bound", -1.0, 1.0, "(]")),
    ("Topologypr", "Uniform"): NONE,
    ("M3omegapr", "Exponential"): NONE,
    ("Brlenspr", "Unconstrained:Uniform"): (Arg("lower bound", 0.0, 0.0, "[]"), pos("upper bound")),
    ("Brlenspr", "Clock:Uniform"): NONE,
    # treeagepr: the calibrations' parameterizations (mean and sd on the natural scale; MrBayes' DoPrsetParm)
    ("Treeagepr", "Gamma"): (pos("mean"), pos("standard deviation")),
    ("Treeagepr", "Lognormal"): (pos("mean"), pos("standard deviation")),
    ("Treeagepr", "Offsetlognormal"): (nonneg("offset"), pos("mean"), pos("standard deviation")),
    ("Treeagepr", "Offsetgamma"): (nonneg("offset"), pos("mean"), pos("standard deviation")),
    # MrBayes' popsizepr reader takes no '-' ("Expecting '<number>'"); its clockratepr normal needs a mean > 0
    ("Popsizepr", "Lognormal"): (nonneg("mean (log scale)"), pos("standard deviation")),
    ("Popsizepr", "Normal"): (nonneg("mean"), pos("standard deviation")),
    ("Clockratepr", "Normal"): (pos("mean"), pos("standard deviation")),
}

# parameter -> the arguments of Fixed(...)
_FIXED = {
    "Tratiopr": (pos("transition/transversion ratio"),),
    "Revmatpr": (pos("rate"),) * 6,
    "Aamodelpr": NAME,
    "Aarevmatpr": (pos("rate"),) * 190,
    "Omegapr": (nonneg("omega"),),
    "Ny98omega1pr": (Arg("omega1", 0.0, 1.0, "[]"),),
    "Ny98omega3pr": (nonneg("omega3"),),
    "M3omegapr": (nonneg("omega"),) * 3,
    "Codoncatfreqs": (nonneg("frequency"),) * 3,
    "Statefreqpr": FREQUENCIES,
    "Shapepr": (pos("shape"),),
    "Ratecorrpr": (Arg("correlation", -1.0, 1.0, "()"),),
    "Pinvarpr": (Arg("proportion", 0.0, 1.0, "[)"),),
    "Covswitchpr": (nonneg("rate"),) * 2,
    "Symdirihyperpr": (Arg("alpha", 0.0, INF, "(]"),),
    "Topologypr": NAME,
    "Brlenspr": NAME,
    "Treeagepr": (pos("age"),),
    "Speciationpr": (pos("net speciation rate"),),
    "Extinctionpr": (Arg("relative extinction rate", 0.0, 1.0, "[)"),),
    "Fossilizationpr": (Arg("relative fossilization rate", 0.0, 1.0, "[]"),),
    "Popsizepr": (pos("population size"),),
    "Clockratepr": (pos("clock rate"),),
    "Cppratepr": (pos("rate"),),
    "Cppmultdevpr": (pos("standard deviation"),),
    "TK02varpr": (pos("variance"),),
    "Igrvarpr": (pos("variance"),),
    "Ratepr": NONE,
    "Generatepr": NONE,
}

# parameter -> the numbers of Dirichlet values MrBayes accepts (None: any, checked per datatype later)
_DIRICHLET_COUNTS = {"Revmatpr": (1, 6), "Aarevmatpr": (1, 190), "Omegapr": (2,), "Codoncatfreqs": (3,),
                     "Statefreqpr": None, "Ratepr": None, "Generatepr": (1,)}

_SUMS_TO_ONE = ("Statefreqpr", "Codoncatfreqs")
SUM_TOLERANCE = 0.001   # MrBayes accepts fixed frequencies that sum to 0.999 .. 1.001


def check_prior(param_name: str, value) -> None:
    """Raise CommandError (one line) when `value`, a converted prior of `prset param_name=...`, has
    the wrong number of arguments or an argument out of range. `value` has `kind`, `args`, `sub`.

    Raises:
        CommandError: e.g. "pinvarpr=Uniform(0,2): the upper bound must be in (0, 1], not 2".
    """
    problem = _problem(param_name, value.kind, value)
    if problem is None and value.sub is not None:
        problem = _problem(param_name, "%s:%s" % (value.kind, value.sub.kind), value.sub)
    if problem is not None:
        raise CommandError("%s=%s: %s" % (param_name.lower(), value, problem))


def rule_for(param_name: str, key: str):
    """The arguments `param_name=key(...)` takes (key 'Head' or 'Head:Sub'): a tuple of Arg, or NAME,
    NAMES, VALUES or FREQUENCIES; None for a combination no rule covers (not checked)."""
    if (param_name, key) in _SPECIAL:
        return _SPECIAL[(param_name, key)]
    family = key.rpartition(":")[2]
    if family == "Fixed":
        return _FIXED.get(param_name)
    return _FAMILY.get(family)


def _problem(param_name: str, key: str, value) -> str | None:
    family, args = key.rpartition(":")[2], tuple(value.args)
    rule = rule_for(param_name, key)
    if rule is None:
        return None
    if rule == VALUES:
        return _dirichlet(param_name, args)
    if rule == NAMES:
        return None if args else "name at least one constraint"
    if rule == FREQUENCIES:
        return _fixed_frequencies(args)
    if rule == NAME:
        if len(args) != 1:
            return "%s takes one name, got %d arguments" % (family, len(args))
        return None if isinstance(args[0], str) else "%s takes a name, not the number %s" % (family, _fmt(args[0]))
    return _numbers(family, rule, args) or _order(family, args) or _sum(param_name, family, args)


def _numbers(family: str, rule: tuple, args: tuple) -> str | None:
    if len(args) != len(rule):
        if not rule:
            return "%s takes no arguments" % family
        names = ", ".join(a.name for a in rule) if len(rule) <= 4 else "%d values" % len(rule)
        return "%s takes %d number%s (%s), got %d" % (family, len(rule), "" if len(rule) == 1 else "s",
                                                      names, len(args))
    for arg, x in zip(rule, args):
        problem = arg.problem(x)
        if problem:
            return problem
    return None


def _order(family: str, args: tuple) -> str | None:
    """Uniform: lower < upper; Offsetexponential: mean > offset."""
    if family == "Uniform" and len(args) == 2 and not args[0] < args[1]:
        return "the lower bound (%s) must be less than the upper bound (%s)" % (_fmt(args[0]), _fmt(args[1]))
    if family == "Offsetexponential" and not args[1] > args[0]:
        return "the mean (%s) must be larger than the offset (%s)" % (_fmt(args[1]), _fmt(args[0]))
    return None


def _sum(param_name: str, family: str, args: tuple) -> str | None:
    if family == "Fixed" and param_name in _SUMS_TO_ONE and abs(sum(args) - 1.0) > SUM_TOLERANCE:
        return "the frequencies must sum to 1, not %g" % sum(args)
    return None


def _dirichlet(param_name: str, args: tuple) -> str | None:
    counts = _DIRICHLET_COUNTS.get(param_name, None)
    if not args or (counts is not None and len(args) not in counts):
        want = " or ".join(str(c) for c in counts) if counts else "at least 1"
        return "Dirichlet takes %s value%s, got %d" % (want, "" if want.endswith("1") else "s", len(args))
    for x in args:
        problem = pos("Dirichlet parameters").problem(x)
        if problem:
            return problem.replace("the Dirichlet parameters must", "every Dirichlet parameter must")
    return None


def _fixed_frequencies(args: tuple) -> str | None:
    """Statefreqpr=fixed(equal|empirical) or fixed(numbers summing to 1); the count is the datatype's."""
    if len(args) == 1 and isinstance(args[0], str):
        word = args[0].lower()
        if "equal".startswith(word) or "empirical".startswith(word):
            return None
        return "expected fixed(equal), fixed(empirical) or fixed(frequencies), not '%s'" % args[0]
    if not args:
        return "Fixed takes equal, empirical or the frequencies"
    for x in args:
        problem = nonneg("frequencies").problem(x)
        if problem:
            return problem.replace("the frequencies must", "every frequency must")
    return _sum("Statefreqpr", "Fixed", args)
