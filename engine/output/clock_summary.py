"""The clock part of MrBayes 3.2.7a's model summary (`showmodel`): a clock tree's parameters after Tau and
V (param_kinds.CLOCK, in its order), the lines under `Prior = Clock:...` (calibrations, tree age) and each
clock parameter's prior and `Subparam.` lines, as mb-double prints them."""
from __future__ import annotations

from mbgpu.clock.distributions import age_distribution, clock_rate_distribution
from mbgpu.clock.model import clock_models
from mbgpu.output.paramnames import part_suffix
from mbgpu.param_kinds import CLOCK

_IN = " " * 25          # the indentation of a parameter's continuation lines
_RELAXED = {"igr": "IgrBrlens", "tk02": "TK02Brlens", "cpp": "CppEvents"}
_RATE_MODEL = {"strict": "is constant (strict clock)", "igr": "varies according to an independent gamma "
               "(white noise) model", "tk02": "varies according to a Brownian motion model",
               "cpp": "varies according to a CPP model"}


def _applies(kind, m) -> bool:
    return kind.applies == "all" or m.tree_prior in kind.applies.split() or m.clock_var == kind.applies


def clock_kinds(settings, divisions: tuple[int, ...]) -> list:
    """The CLOCK kinds MrBayes lists for the clock tree of `divisions` ([] without a clock there)."""
    m = _model(settings, divisions)
    return [] if m is None else [k for k in CLOCK if _applies(k, m)]


def _model(settings, divisions):
    for m in clock_models(settings):
        if m is not None and set(divisions) <= set(m.divisions):
            return m
    return None


def _f2(prior) -> str:
    return "%s(%s)" % (prior.kind, ",".join("%.2f" % float(a) for a in prior.args))


def prior_lines(kind: str, prior, settings, divisions) -> list[str]:
    """`Prior = ...` text and its continuation lines for a clock parameter (prior: its PriorValue or None)."""
    m = _model(settings, divisions)
    sfx = part_suffix(m.divisions, len(settings.divisions))      # the parameters' names carry it
    if kind == "clockrate":
        return [clock_rate_distribution(prior.kind, prior.args).text(), _IN + "The clock rate " +
                _RATE_MODEL[m.clock_var]]
    if kind == "popsize" and prior.kind == "Normal":
        return ["Truncated Normal(%s)" % ",".join("%.2f" % float(a) for a in prior.args)]
    if kind == "growth":
        return ["Fixed(%.2f)" % m.growth]
    if kind == "cppevents":
        return ["Poisson (Lambda_cpp%s) [Events]" % sfx,
                _IN + "Lognormal (0.00,%.2f) [Rate multipliers]" % m.cppmultdev]
    if kind == "tk02rates":
        return ["LogNormal (expectation = r_0, variance = TK02var%s * v) " % sfx,
                _IN + "   [r_0 is beginning rate of branch, v is branch length]"]
    if kind == "igrrates":
        return ["Gamma (expectation = v, variance = Igrvar%s * v) " % sfx, _IN + "   [where v is branch length]"]
    return [_f2(prior)]


def subparam(kind: str, settings, divisions) -> str | None:
    """The `Subparam.` of V and of the relaxed clock's variance / rate parameters (MrBayes' branch rates)."""
    m = _model(settings, divisions)
    if m is None or m.clock_var not in _RELAXED:
        return None
    if kind in ("brlens", "igrvar", "tk02var", "cpprate", "cppmultdev"):
        return _RELAXED[m.clock_var] + part_suffix(m.divisions, len(settings.divisions))
    return None


def brlens_lines(settings, divisions) -> list[str]:
    """The lines under V's `Prior = Clock:...`: its calibrations (tips in taxon order, then nodes) and the
    tree age prior (not under the coalescent, nor with the root calibrated), or `Node ages are not
    constrained`."""
    m = _model(settings, divisions)
    age = age_distribution(m.tree_age.family, m.tree_age.params).text()
    tree_age = [] if m.tree_prior == "coalescence" else ["Tree age has a %s distribution" % age]
    tips = sorted(m.tip_calibrations, key=lambda c: min(c.taxa))
    cals = ['The age of terminal "%s" is %s' % (c.name, c.dist.text()) for c in tips]
    cals += ["The age of node '%s' is %s" % (c.name, c.dist.text()) for c in m.node_calibrations]
    if not m.calibrated or not settings.calibrations:
        return [_IN + line for line in tree_age + ["Node ages are not constrained"]]
    ntax = settings.matrix.ntax - len(settings.deleted)
    if any(len(c.taxa - settings.deleted) == ntax for c in m.node_calibrations):
        tree_age = []              # the root's calibration replaces the tree age prior
    counted = len(tips) + sum(not c.tip for c in settings.calibrations.values())  # MrBayes counts unenforced too
    head = ("Node depths are calibrated by the following age constraint:" if counted == 1 else
            "Node depths are constrained by the following age constraints:")
    return [_IN + head] + [_IN + "-- " + line for line in cals + tree_age]
