"""The free (estimated) model parameters of an analysis, linked across divisions as MrBayes links them.

A parameter is free when its prior is not `fixed(...)`; divisions share one parameter unless
`unlink` separates them or their settings differ. The list fixes the `.p` file's columns and the
terms of the log prior.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.datatypes import DNA

_AA3 = ("Ala", "Arg", "Asn", "Asp", "Cys", "Gln", "Glu", "Gly", "His", "Ile", "Leu", "Lys", "Met", "Phe", "Pro",
        "Ser", "Thr", "Trp", "Tyr", "Val")
KINDS = ("tratio", "revmat", "statefreq", "shape", "pinvar", "ratemult")
_UNLINK_NAME = {"tratio": "Tratio", "revmat": "Revmat", "statefreq": "Statefreq", "shape": "Shape",
                "pinvar": "Pinvar", "ratemult": "Ratemultiplier"}


@dataclass
class FreeParameter:
    """One estimated parameter: its kind, the 1-based divisions sharing it, prior and start value."""

    kind: str
    divisions: tuple[int, ...]
    prior: object
    value: np.ndarray
    labels: list[str]


def _letters(datatype: str) -> str:
    """MrBayes labels RNA columns with A C G T too (pi(T), r(A<->T))."""
    return DNA


def _labels(kind: str, d) -> list[str]:
    if kind == "tratio":
        return ["kappa"]
    if kind == "revmat":
        a = _letters(d.datatype)
        return ["r(%s<->%s)" % (a[i], a[j]) for i in range(4) for j in range(i + 1, 4)]
    if kind == "statefreq":
        return ["pi(%s)" % x for x in (_AA3 if d.datatype == "protein" else _letters(d.datatype))]
    return {"shape": ["alpha"], "pinvar": ["pinvar"]}[kind]


def _applies(kind: str, d) -> bool:
    """Whether division `d` has a free parameter of this kind."""
    lset, prset = d.lset, d.prset
    nuc = d.datatype in ("dna", "rna")
    if kind == "tratio":
        return nuc and lset["Nst"] == "2" and prset["Tratiopr"].kind != "Fixed"
    if kind == "revmat":
        return nuc and lset["Nst"] == "6" and prset["Revmatpr"].kind != "Fixed"
    if kind == "statefreq":
        equalin = d.datatype == "protein" and [str(a).lower() for a in prset["Aamodelpr"].args][:1] == ["equalin"]
        return (nuc or equalin) and prset["Statefreqpr"].kind != "Fixed"
    if kind == "shape":
        return lset["Rates"] in ("Gamma", "Invgamma") and prset["Shapepr"].kind != "Fixed"
    if kind == "pinvar":
        return lset["Rates"] in ("Propinv", "Invgamma") and prset["Pinvarpr"].kind != "Fixed"
    raise AssertionError(kind)


def _prior_of(kind: str, d):
    return d.prset[{"tratio": "Tratiopr", "revmat": "Revmatpr", "statefreq": "Statefreqpr", "shape": "Shapepr",
                    "pinvar": "Pinvarpr"}[kind]]


def _start(kind: str, n_labels: int) -> np.ndarray:
    """MrBayes' start values; kappa is held as the pair (k/(1+k), 1/(1+k)), its prior's scale."""
    if kind in ("revmat", "statefreq"):
        return np.full(n_labels, 1.0 / n_labels)
    if kind == "tratio":
        return np.array([0.5, 0.5])
    return np.array([{"shape": 1.0, "pinvar": 0.0}[kind]])


def _unlinked(settings, kind: str, number: int) -> bool:
    value = settings.unlinked.get(_UNLINK_NAME[kind])
    return value is not None and (value == "all" or number in value)


def free_parameters(settings) -> list[FreeParameter]:
    """Every free parameter, in MrBayes' column order (kind first, then division)."""
    out: list[FreeParameter] = []
    for kind in KINDS[:-1]:
        groups: dict[tuple, list[int]] = {}
        for i, d in enumerate(settings.divisions, 1):
            if not _applies(kind, d):
                continue
            key = (str(_prior_of(kind, d)), d.datatype == "protein", d.lset["Ngammacat"] if kind == "shape" else 0)
            if _unlinked(settings, kind, i):
                key = key + (i,)
            groups.setdefault(key, []).append(i)
        for divs in sorted(groups.values()):
            d = settings.divisions[divs[0] - 1]
            labels = _labels(kind, d)
            out.append(FreeParameter(kind, tuple(divs), _prior_of(kind, d), _start(kind, len(labels)), labels))
    out += _rate_multipliers(settings)
    return out


def _rate_multipliers(settings) -> list[FreeParameter]:
    divs = tuple(i for i, d in enumerate(settings.divisions, 1) if d.prset["Ratepr"].kind != "Fixed")
    if len(divs) < 2:
        return []
    start = settings.startvals.get("Ratemultiplier")
    value = np.array([start[i - 1] for i in divs] if start else [1.0] * len(divs))
    prior = settings.divisions[divs[0] - 1].prset["Ratepr"]
    return [FreeParameter("ratemult", divs, prior, value, ["m{%d}" % i for i in divs])]


def column_names(settings, params: list[FreeParameter]) -> list[str]:
    """The .p header after `Gen LnL LnPr`: TL then every parameter's labels with division suffixes."""
    multi = len(settings.divisions) > 1
    cols = ["TL{all}" if multi else "TL"]
    for p in params:
        if p.kind == "ratemult":
            cols += p.labels
            continue
        suffix = "{%s}" % ",".join(map(str, p.divisions)) if multi else ""
        cols += [lab + suffix for lab in p.labels]
    return cols


def parameter_values(params: list[FreeParameter], values: list | None = None) -> list[float]:
    """Values in column order (revmat and state frequencies sum to 1; kappa as k)."""
    out: list[float] = []
    for p, v in zip(params, values if values is not None else [p.value for p in params]):
        v = np.asarray(v, dtype=np.float64)
        if p.kind in ("revmat", "statefreq"):
            v = v / v.sum()
        elif p.kind == "tratio":
            v = np.array([v[0] / v[1]])
        out += v.tolist()
    return out
