"""Turn a division's `lset`/`prset` settings into ModelSpecs with starting values.

Fixed priors give fixed values; estimated parameters start where MrBayes starts them (equal rates
and frequencies, alpha 1, pinvar 0, kappa 1). Settings mbgpu cannot run yet raise NotImplementedYet
naming the setting, so a file never runs a different model than it asks for.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.errors import ModelError, NotImplementedYet
from mbgpu.models import ModelSpec, empirical_frequencies
from mbgpu.param_kinds import AA_MODELS
from mbgpu.patterns import PatternSet

_RATES = {"Equal": "equal", "Gamma": "gamma", "Propinv": "propinv", "Invgamma": "invgamma"}


@dataclass
class DivisionModel:
    """The model of one division: one spec per pattern set (standard data: one per state count)."""

    index: int
    datatype: str
    specs: list[ModelSpec]
    pattern_sets: list[PatternSet]


def _fixed(prior) -> tuple | None:
    return prior.args if prior is not None and prior.kind == "Fixed" else None


def _check_supported(d, number: int, prset_defaults) -> None:
    lset = d.lset
    unsupported = [("Nucmodel", "4by4"), ("Covarion", "No"), ("Nst", None), ("Rates", None)]
    for key, ok in unsupported:
        value = lset[key]
        if ok is not None and value != ok and not (key == "Nucmodel" and d.datatype == "protein"):
            raise NotImplementedYet("division %d: lset %s=%s is not supported yet" % (number, key.lower(), value))
    if lset["Nst"] == "Mixed":
        raise NotImplementedYet("division %d: lset nst=mixed is not supported yet" % number)
    if lset["Rates"] not in _RATES:
        raise NotImplementedYet("division %d: lset rates=%s is not supported yet" % (number, lset["Rates"]))
    _check_frequency_prior(d, number, prset_defaults["Statefreqpr"])
    aa = d.prset["Aamodelpr"]
    if d.datatype == "protein" and aa.kind != "Fixed":
        raise NotImplementedYet("division %d: prset aamodelpr=%s is not supported yet" % (number, aa.kind))


def coding(d, number: int) -> str:
    """`lset coding` as MrBayes applies it: to standard data only, where the default is Variable (Mkv);
    DNA, RNA and protein divisions use all characters whatever coding says (MrBayes skips them silently)."""
    if d.datatype != "standard":
        return "all"
    value = d.lset["Coding"]
    if value not in ("All", "Variable"):
        raise NotImplementedYet("division %d: lset coding=%s is not supported yet" % (number, value.lower()))
    return value.lower()


_FREQ_STATES = {"dna": 4, "rna": 4, "protein": 20}


def _check_frequency_prior(d, number: int, default) -> None:
    """`prset statefreqpr` against the division's datatype, as MrBayes checks it: a Dirichlet takes one
    value (for all states) or one per state, fixed frequencies one per state. The table's `default`,
    Dirichlet(1,1,1,1), is MrBayes' all-ones default of every datatype (20 ones for protein)."""
    n, prior = _FREQ_STATES.get(d.datatype), d.prset["Statefreqpr"]
    if n is None or prior is None:
        return
    numbers = [a for a in prior.args if not isinstance(a, str)]
    if prior.kind == "Dirichlet" and len(numbers) not in (1, n) and prior != default:
        raise ModelError("division %d: statefreqpr=%s: %s data needs %d Dirichlet values (or one for all), got %d"
                         % (number, prior, d.datatype.upper() if n == 4 else d.datatype, n, len(numbers)))
    if prior.kind == "Fixed" and numbers and len(numbers) != n:
        raise ModelError("division %d: statefreqpr=%s: %s data needs %d frequencies, got %d"
                         % (number, prior, d.datatype.upper() if n == 4 else d.datatype, n, len(numbers)))


def _frequencies(prior, n_states: int, patterns: list[PatternSet], number: int):
    fixed = _fixed(prior)
    if fixed is None:
        return None  # Dirichlet prior: start at equal frequencies
    if len(fixed) == 1 and isinstance(fixed[0], str):
        word = fixed[0].lower()
        if "equal".startswith(word):
            return None
        if "empirical".startswith(word):
            tips = np.concatenate([p.tip_partials() for p in patterns], axis=1)
            weights = np.concatenate([p.weights for p in patterns])
            return empirical_frequencies(tips, weights)
        raise ModelError("division %d: statefreqpr=fixed(%s): expected equal, empirical or %d numbers"
                         % (number, fixed[0], n_states))
    values = np.array([float(v) for v in fixed])
    if values.size != n_states or np.any(values < 0) or values.sum() <= 0:
        raise ModelError("division %d: statefreqpr=fixed(...) needs %d non-negative frequencies, got %d values"
                         % (number, n_states, values.size))
    return values / values.sum()


def _aamodel(d, number: int) -> str:
    args = d.prset["Aamodelpr"].args
    if len(args) != 1 or not isinstance(args[0], str):
        raise ModelError("division %d: aamodelpr=fixed(NAME) expects one model name" % number)
    from mbgpu.commands.params import resolve
    from mbgpu.errors import CommandError

    try:
        name = resolve(args[0], [m.capitalize() for m in AA_MODELS], "amino-acid model").lower()
    except CommandError as err:
        raise ModelError("division %d: %s" % (number, err.message)) from None
    if name == "gtr":
        raise NotImplementedYet("division %d: aamodelpr=fixed(gtr) is not supported yet" % number)
    return name


def division_spec(d, number: int, patterns: list[PatternSet], prset_defaults) -> ModelSpec:
    """The ModelSpec (start or fixed values) of one division; n_states left for the caller.
    `prset_defaults`: prset's defaults (Settings.defaults["prset"])."""
    _check_supported(d, number, prset_defaults)
    lset, prset = d.lset, d.prset
    spec = ModelSpec(datatype=d.datatype, rates=_RATES[lset["Rates"]], ngammacat=int(lset["Ngammacat"]),
                     coding=coding(d, number))
    if d.datatype in ("dna", "rna"):
        spec.nst = int(lset["Nst"])
        kappa = _fixed(prset["Tratiopr"])
        spec.kappa = float(kappa[0]) if kappa else 1.0
        revmat = _fixed(prset["Revmatpr"])
        if revmat is not None:
            if len(revmat) != 6:
                raise ModelError("division %d: revmatpr=fixed(...) needs 6 rates, got %d" % (number, len(revmat)))
            spec.revmat = tuple(float(r) for r in revmat)
    if d.datatype == "protein":
        spec.aamodel = _aamodel(d, number)
    n = 4 if d.datatype in ("dna", "rna") else 20
    if d.datatype != "standard" and (d.datatype != "protein" or spec.aamodel == "equalin"):
        spec.statefreqs = _frequencies(prset["Statefreqpr"], n, patterns, number)
    shape = _fixed(prset["Shapepr"])
    spec.alpha = float(shape[0]) if shape else 1.0
    pinvar = _fixed(prset["Pinvarpr"])
    spec.pinvar = float(pinvar[0]) if pinvar else 0.0
    return spec


def variable_characters(ps: PatternSet, masks: np.ndarray) -> PatternSet:
    """The pattern set without the characters MrBayes excludes under coding=variable (Mkv) as
    "incompatible with the specified coding bias": those with a state that every taxon allows
    (CheckCharCodingType; '?', gaps and full ambiguity allow every state). `masks` is the matrix."""
    full = np.uint32((1 << ps.n_states) - 1)
    keep = np.bitwise_and.reduce(ps.masks & full, axis=0) == 0
    columns = ps.columns[np.bitwise_and.reduce(masks[:, ps.columns] & full, axis=0) == 0]
    return PatternSet(ps.datatype, ps.n_states, ps.masks[:, keep], ps.weights[keep], columns, ps.ordered)


def build_division_models(settings, pattern_sets: list[list[PatternSet]]) -> list[DivisionModel]:
    """One DivisionModel per division of the active partition."""
    from dataclasses import replace

    out = []
    for i, (d, sets) in enumerate(zip(settings.divisions, pattern_sets), 1):
        base = division_spec(d, i, sets, settings.defaults["prset"])
        specs = [replace(base, n_states=p.n_states, ordered=p.ordered) if d.datatype == "standard" else base
                 for p in sets]
        for s in specs:
            s.validate()
        out.append(DivisionModel(i, d.datatype, specs, sets))
    return out


def rate_multipliers(settings) -> np.ndarray:
    """Start values of the partition rate multipliers (startvals ratemultiplier=..., else 1)."""
    n = len(settings.divisions)
    given = settings.startval("Ratemultiplier")
    return np.array(given if given is not None else [1.0] * n, dtype=np.float64)
