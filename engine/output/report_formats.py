"""MrBayes' `report tratio|revmat|ratemult` formats: how a parameter's values are written to the `.p` file.

The sampler holds kappa as the pair (k/(1+k), 1/(1+k)), the rates of a reversible matrix and the rate
multipliers as they move; only the written columns change. MrBayes takes each parameter's format from
the first division it applies to (measured with mb-double: `report applyto=(2)` leaves kappa{1,2} alone).
"""
from __future__ import annotations

import numpy as np

# kind -> (report option, its default); the formats MrBayes 3.2.7a offers are in the command table
_OPTION = {"tratio": ("Tratio", "Ratio"), "revmat": ("Revmat", "Dirichlet"), "ratemult": ("Ratemult", "Scaled")}


def formats(settings, params) -> list[str | None]:
    """Each parameter's report format other than MrBayes' default (None: the default)."""
    out: list[str | None] = []
    for p in params:
        option, default = _OPTION.get(p.kind, (None, None))
        fmt = settings.divisions[p.divisions[0] - 1].report.get(option, default) if option else None
        out.append(None if fmt == default else fmt)
    return out


def labels(kind: str, fmt: str | None, default: list[str]) -> list[str]:
    """The labels (without suffix) of a parameter written in format `fmt`: kappa as `ti tv` in Dirichlet."""
    return ["ti", "tv"] if kind == "tratio" and fmt == "Dirichlet" else default


def values(kind: str, fmt: str, held: np.ndarray) -> np.ndarray:
    """The written values of a parameter held as `held`, in the non-default format `fmt`: kappa's pair
    normalised (Dirichlet), revmat over its last rate G<->T (Ratio), multipliers over the first (Ratio)
    or over their sum (Dirichlet)."""
    if kind == "revmat" or (kind == "ratemult" and fmt == "Ratio"):
        return held / (held[-1] if kind == "revmat" else held[0])
    return held / held.sum()


def unify_ratemult(divisions, groups) -> list[str]:
    """MrBayes 3.2.7a's check each time it sets up the model (SetUpLinkTable, after report, lset, prset,
    link, unlink): divisions sharing one rate multiplier (`groups`, 1-based, as parameters.link_groups)
    are given the `report ratemult` format of the first of them, in place, and the warning MrBayes prints
    is returned for each group whose formats differed. MrBayes' "parameter %d" has no argument; mb-double
    prints the number of divisions there."""
    option, default = _OPTION["ratemult"]
    lines = []
    for group in groups:
        first = divisions[group[0] - 1].report.get(option, default)
        if all(divisions[i - 1].report.get(option, default) == first for i in group):
            continue
        for i in group[1:]:
            divisions[i - 1].report[option] = first
        lines += ["      WARNING: Report format for ratemult (parameter %d) varies across partitions."
                  % len(divisions), "         MrBayes will use the format for the first partition, which is %s."
                  % first]
    return lines
