"""The model parameters of an analysis and which divisions share them, decided as MrBayes 3.2.7a decides.

MrBayes (model.c) keeps a link-group id per parameter kind and division (`linkTable`, here
`Settings.unlinked`: `unlink` gives each listed division a fresh id, `link` gives the listed
divisions one common id). When an analysis is set up, its `SetUpLinkTable` compares the divisions
in pairs: two divisions share a parameter when the kind applies to both, their link ids are equal
and `IsModelSame` finds their settings compatible (the `_same_*` functions below, one per kind).
Each later division joins the last earlier division it is compatible with, so the grouping is
MrBayes' even where compatibility is not transitive. A shared parameter takes the prior of its
first division: it is free (estimated, a `.p` column) unless that prior is `fixed(...)`.

The list of free parameters fixes the `.p` file's columns and the terms of the log prior.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbgpu.commands.params import PriorValue
from mbgpu.errors import NotImplementedYet
from mbgpu.output import report_formats
from mbgpu.param_kinds import KIND, MULTIPLIERS, PARAMS, RATIO, SIMPLEX

_TOL = 1e-5     # MrBayes' AreDoublesEqual tolerance in IsModelSame


@dataclass
class FreeParameter:
    """One estimated parameter: its kind, the 1-based divisions sharing it, prior and start value."""

    kind: str
    divisions: tuple[int, ...]
    prior: object
    value: np.ndarray


# ---- what applies to one division (IsModelSame's isApplic) ------------------------------------------

def _nucleotide(d) -> bool:
    return d.datatype in ("dna", "rna")


def _aamodel(d) -> str:
    args = d.prset["Aamodelpr"].args
    return str(args[0]).lower() if args else "poisson"


def applies(kind: str, d) -> bool:
    """Whether division `d` has a parameter of this kind at all (free or fixed)."""
    lset = d.lset
    codon = _nucleotide(d) and lset["Nucmodel"] == "Codon"
    if kind == "tratio":
        return _nucleotide(d) and lset["Nst"] == "2"
    if kind == "revmat":
        if d.datatype == "protein":
            return d.prset["Aamodelpr"].kind == "Fixed" and _aamodel(d) == "gtr"
        return _nucleotide(d) and lset["Nst"] in ("6", "Mixed")
    if kind == "shape":
        return lset["Rates"] not in ("Equal", "Propinv", "Kmixture") and not codon
    if kind == "pinvar":
        return lset["Rates"] in ("Propinv", "Invgamma") and lset["Covarion"] == "No" and not codon
    return kind in ("statefreq", "ratemult")


def is_free(kind: str, d) -> bool:
    """Whether a parameter whose first division is `d` is estimated (its prior is not fixed)."""
    prior = d.prset[KIND[kind].prset]
    if kind == "statefreq":
        if d.datatype == "standard":
            return d.prset["Symdirihyperpr"].kind != "Fixed"
        if d.datatype == "protein" and (d.prset["Aamodelpr"].kind != "Fixed"
                                        or _aamodel(d) not in ("equalin", "gtr")):
            return False
        return prior.kind == "Dirichlet"
    return prior.kind != "Fixed"


# ---- when two divisions may share a parameter (IsModelSame) ----------------------------------------

def _numbers(prior, n: int) -> list[float]:
    """A prior's n numbers: one stands for all n, and so do equal values of another count (the
    table's default Dirichlet(1,1,1,1) is MrBayes' all-ones default of every datatype)."""
    args = [float(a) for a in prior.args if not isinstance(a, str)] or [1.0]
    if len(args) == 1 or (len(args) != n and len(set(args)) == 1):
        return [args[0]] * n
    return args


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) < _TOL for x, y in zip(a, b))


def _same_prior(p, q, n: int) -> bool:
    """Both priors of one form with equal numbers (IsModelSame's `AreDoublesEqual` chains)."""
    return p.kind == q.kind and _close(_numbers(p, n), _numbers(q, n))


def _same_data(a, b) -> bool:
    """Both nucleotide (DNA and RNA mix), or else one datatype."""
    return (_nucleotide(a) and _nucleotide(b)) or a.datatype == b.datatype


def _same_tratio(a, b) -> bool:
    return _same_prior(a.prset["Tratiopr"], b.prset["Tratiopr"], 2)


def _same_revmat(a, b) -> bool:
    if _nucleotide(a) != _nucleotide(b) or a.lset["Nst"] != b.lset["Nst"]:
        return False
    return _same_prior(a.prset["Revmatpr"], b.prset["Revmatpr"], 6)


def fix_type(prior) -> str:
    """MrBayes' stateFreqsFixType of a fixed frequency prior: equal, empirical or user."""
    words = [str(a).lower() for a in prior.args if isinstance(a, str)]
    if words and "empirical".startswith(words[0]):
        return "empirical"
    return "user" if not words and prior.args else "equal"


def _same_frequency_prior(p, q, n: int) -> bool:
    """Priors of different forms (Dirichlet and fixed) do not keep divisions apart: IsModelSame has
    no `else` there, so MrBayes links them and the first division's prior rules. Two user-fixed
    priors are compared by their Dirichlet values (sic); mbgpu keeps none, so they count as equal."""
    if p.kind != q.kind:
        return True
    if p.kind == "Dirichlet":
        return _close(_numbers(p, n), _numbers(q, n))
    return fix_type(p) == fix_type(q)


def _symdir_numbers(prior) -> list[float]:
    """Symdirihyperpr's numbers, fixed(infinity) as MrBayes stores it (-1)."""
    return [-1.0 if isinstance(a, str) else float(a) for a in prior.args] or [-1.0]


def _same_symdir(a, b) -> bool:
    """Standard data: the same symmetric-Dirichlet hyperprior, and the same number of beta categories
    unless the frequencies are fixed to be equal (fixed(infinity))."""
    p, q = a.prset["Symdirihyperpr"], b.prset["Symdirihyperpr"]
    if p.kind != q.kind or not _close(_symdir_numbers(p), _symdir_numbers(q)):
        return False
    return (p.kind == "Fixed" and _symdir_numbers(p)[0] == -1.0) or a.lset["Nbetacat"] == b.lset["Nbetacat"]


def _same_statefreq(a, b) -> bool:
    if not _same_data(a, b):
        return False
    if (_nucleotide(a) and a.lset["Nucmodel"] != b.lset["Nucmodel"]) or a.lset["Covarion"] != b.lset["Covarion"]:
        return False
    pa, pb = a.prset, b.prset
    if a.datatype == "standard":
        return _same_symdir(a, b)
    if a.datatype == "protein":
        if pa["Aamodelpr"].kind != pb["Aamodelpr"].kind or pa["Aamodelpr"].kind != "Fixed":
            return True
        if _aamodel(a) != _aamodel(b):
            return False
        if _aamodel(a) not in ("equalin", "gtr"):
            return True
        return _same_frequency_prior(pa["Statefreqpr"], pb["Statefreqpr"], 20)
    return _same_frequency_prior(pa["Statefreqpr"], pb["Statefreqpr"], 4)


def _same_shape(a, b) -> bool:
    if not _same_data(a, b):
        return False
    cats = "Nlnormcat" if a.lset["Rates"] == "LNorm" else "Ngammacat"
    if a.lset[cats] != b.lset[cats]:
        return False
    return _same_prior(a.prset["Shapepr"], b.prset["Shapepr"], 2)


def _same_pinvar(a, b) -> bool:
    if not _same_data(a, b):
        return False
    if _nucleotide(a) and _nucleotide(b) and a.lset["Nucmodel"] != b.lset["Nucmodel"]:
        return False
    if a.lset["Covarion"] != b.lset["Covarion"]:
        return False
    return _same_prior(a.prset["Pinvarpr"], b.prset["Pinvarpr"], 2)


def _rate_prior_form(d) -> str:
    """MrBayes' ratePr string: `variable` is stored as Dirichlet, whatever its value."""
    return "Fixed" if d.prset["Ratepr"].kind == "Fixed" else "Dirichlet"


def _same_ratemult(a, b) -> bool:
    """Same ratepr form and branch-length prior (MrBayes: P_BRLENS the same and linked)."""
    return _rate_prior_form(a) == _rate_prior_form(b) and str(a.prset["Brlenspr"]) == str(b.prset["Brlenspr"])


_SAME = {"tratio": _same_tratio, "revmat": _same_revmat, "statefreq": _same_statefreq, "shape": _same_shape,
         "pinvar": _same_pinvar, "ratemult": _same_ratemult}


# ---- grouping (SetUpLinkTable) ---------------------------------------------------------------------

def link_groups(settings, kind: str) -> list[tuple[int, ...]]:
    """The 1-based divisions sharing each parameter of this kind, ordered by first division."""
    divs = settings.divisions
    ids = settings.link_ids(KIND[kind].name)
    ok = [applies(kind, d) for d in divs]
    if kind == "ratemult":      # MrBayes: rate multipliers are shared only along one tree's branch lengths
        from mbgpu.tree_groups import tree_link_ids

        trees = zip(tree_link_ids(settings, "Topology"), tree_link_ids(settings, "Brlens"))   # one per V
        ids = tuple((i, t) for i, t in zip(ids, trees))
    model = [1 if ok[0] else -1] if len(divs) == 1 else [0] * len(divs)
    count = 0
    for i in range(len(divs) - 1):
        for k in range(i + 1, len(divs)):
            if ok[i] and ok[k] and ids[i] == ids[k] and _SAME[kind](divs[i], divs[k]):
                if model[i] == 0:
                    count += 1
                    model[i] = count
                model[k] = model[i]     # the last compatible earlier division wins (sic)
                continue
            for j in (i, k):
                if not ok[j]:
                    model[j] = -1
                elif model[j] == 0:
                    count += 1
                    model[j] = count
    groups: dict[int, list[int]] = {}
    for number, m in enumerate(model, 1):
        if m > 0:
            groups.setdefault(m, []).append(number)
    return sorted(tuple(g) for g in groups.values())


def _n_values(kind: str, d) -> int:
    return KIND[kind].n_values or (20 if d.datatype == "protein" else 4)


def _start(kind: str, n: int) -> np.ndarray:
    """MrBayes' start values; kappa is held as the pair (k/(1+k), 1/(1+k)), its prior's scale."""
    start = KIND[kind].start
    return np.full(n, 1.0 / n if start is None else start)


def free_parameters(settings) -> list[FreeParameter]:
    """Every free parameter, in MrBayes' column order (kind first, then first division).

    Raises:
        NotImplementedYet: divisions whose state frequencies MrBayes links under a fixed prior that
            would give one of them other frequencies than its own (see `_check_fixed_frequencies`).
    """
    out: list[FreeParameter] = []
    for kind in (k.kind for k in PARAMS if k.form != MULTIPLIERS):
        for group in link_groups(settings, kind):
            d = settings.divisions[group[0] - 1]
            if is_free(kind, d):
                out.append(FreeParameter(kind, group, d.prset[KIND[kind].prset], _start(kind, _n_values(kind, d))))
            elif kind == "statefreq":
                _check_fixed_frequencies(settings, group)
    return out + _rate_multipliers(settings)


def _rate_multipliers(settings) -> list[FreeParameter]:
    """One parameter per linked group of divisions with a free `ratepr`. Its prior is the Dirichlet of
    the divisions' own values (`variable` is 1). A group of one division (`prset applyto=(1)
    ratepr=variable`, or a division alone on its tree) is a parameter too, as in MrBayes 3.2.7a: its
    moves are MrBayes' one-rate cases (mbgpu.sampler.param_moves.lone_multiplier_move), its prior 0.

    Raises:
        NotImplementedYet: a group of one division whose Dirichlet value is not 1: MrBayes' moves then
            add prior ratios that its LogPrior (0 for one value) never counts, so its LnPr drifts.
    """
    start = settings.startval("Ratemultiplier")
    out = []
    for group in link_groups(settings, "ratemult"):
        if not is_free("ratemult", settings.divisions[group[0] - 1]) or len(settings.divisions) < 2:
            continue
        alphas = tuple(float(_numbers(settings.divisions[i - 1].prset["Ratepr"], 1)[0]) for i in group)
        if len(group) < 2 and alphas[0] != 1.0:
            raise NotImplementedYet("prset ratepr=%s leaving division %d with a rate multiplier of its own "
                                    "(alone in its ratepr, or alone on its tree) is not supported yet "
                                    "(ratepr=variable is)" % (settings.divisions[group[0] - 1].prset["Ratepr"],
                                                              group[0]))
        value = np.array([start[i - 1] for i in group] if start else [KIND["ratemult"].start] * len(group))
        out.append(FreeParameter("ratemult", group, PriorValue("Dirichlet", alphas), value))
    return out


def _own_frequencies(d, number: int) -> tuple:
    """What mbgpu's model of division `d` (numbered `number`) uses when no free parameter covers it:
    ('freqs', values) (equal or user-fixed), ('empirical', number) (its own data's) or ('model', name)
    (standard data, a fixed amino-acid model)."""
    if d.datatype == "standard" or (d.datatype == "protein" and _aamodel(d) not in ("equalin", "gtr")):
        return ("model", d.datatype + ":" + _aamodel(d))
    prior, n = d.prset["Statefreqpr"], _n_values("statefreq", d)
    kind = fix_type(prior) if prior.kind == "Fixed" else "equal"
    if kind == "empirical":
        return ("empirical", number)
    values = np.array([float(a) for a in prior.args]) if kind == "user" else np.ones(n)
    return ("freqs", tuple((values / values.sum()).tolist()))


def _same_frequencies(a: tuple, b: tuple) -> bool:
    if a[0] != "freqs" or b[0] != "freqs":
        return a == b
    return len(a[1]) == len(b[1]) and all(math.isclose(x, y, abs_tol=1e-12) for x, y in zip(a[1], b[1]))


def _check_fixed_frequencies(settings, group: tuple[int, ...]) -> None:
    """MrBayes fixes every division of a linked group to its first division's frequencies: its
    `fixed(...)` values (equal or user) or the empirical frequencies pooled over the group. mbgpu
    gives each division its own, so a group where they would differ is refused."""
    divs = [settings.divisions[i - 1] for i in group]
    first = _own_frequencies(divs[0], group[0])
    if all(_same_frequencies(_own_frequencies(d, i), first) for d, i in zip(divs[1:], group[1:])):
        return
    spec = ",".join(map(str, group))
    raise NotImplementedYet(
        "divisions %s share one fixed state-frequency parameter: MrBayes links them and fixes all to division %d's "
        "statefreqpr=%s%s; linking fixed frequencies other than each division's own is not supported yet "
        "('unlink statefreq=(%s);' gives each division its own)"
        % (spec, group[0], divs[0].prset["Statefreqpr"], ", pooled over them" if first[0] == "empirical" else "",
           spec))


def parameter_values(params: list[FreeParameter], values: list | None = None, formats=None) -> list[float]:
    """Values in column order (revmat and state frequencies sum to 1; kappa as k), or in the `report`
    format of each parameter where `formats` (mbgpu.output.report_formats.formats) names one."""
    out: list[float] = []
    formats = formats or [None] * len(params)
    for p, v, fmt in zip(params, values if values is not None else [p.value for p in params], formats):
        v = np.asarray(v, dtype=np.float64)
        if fmt is not None:
            v = report_formats.values(p.kind, fmt, v)
        elif KIND[p.kind].form == SIMPLEX:
            v = v / v.sum()
        elif KIND[p.kind].form == RATIO:
            v = np.array([v[0] / v[1]])
        out += v.tolist()
    return out
