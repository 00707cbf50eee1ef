"""Which parameter values each division's model uses, and building (cached) models from them.

A chain's state holds one value array per free parameter (engine.parameters.FreeParameter); a
division's ModelSpec is its base spec (fixed values and settings) with those values filled in.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from engine.models import build_model

_FIELD = {"tratio": "kappa", "revmat": "revmat", "statefreq": "statefreqs", "shape": "alpha", "pinvar": "pinvar"}


def spec_with_values(spec, params, values, division: int):
    """`spec` of 1-based `division` with every free parameter that covers it filled in."""
    changes = {}
    for p, v in zip(params, values):
        if division not in p.divisions or p.kind == "ratemult":
            continue
        if p.kind == "tratio":
            changes["kappa"] = float(v[0] / v[1])
        elif p.kind == "revmat":
            changes["revmat"] = tuple(float(x) for x in v / v.sum())
        elif p.kind == "statefreq":
            changes["statefreqs"] = np.asarray(v / v.sum(), dtype=np.float64)
        else:
            changes[_FIELD[p.kind]] = float(v[0])
    return replace(spec, **changes)


def rate_multiplier(params, values, division: int, fixed: float) -> float:
    """The division's rate multiplier: the free one when ratepr is variable, else the fixed start value."""
    for p, v in zip(params, values):
        if p.kind == "ratemult" and division in p.divisions:
            return float(v[list(p.divisions).index(division)])
    return fixed


class ModelCache:
    """Builds a SubstitutionModel once per distinct spec (keyed by its parameter values). Specs that
    differ only in rate variation (a shape or pinvar proposal) share one Q and its eigensystem."""

    def __init__(self, limit: int = 256):
        self._cache: dict = {}
        self._by_q: dict = {}
        self.limit = limit

    def get(self, spec):
        freqs = None if spec.statefreqs is None else tuple(np.asarray(spec.statefreqs).tolist())
        aarevmat = None if spec.aarevmat is None else tuple(np.asarray(spec.aarevmat).tolist())
        q_key = (spec.datatype, spec.n_states, spec.nst, tuple(spec.revmat), spec.kappa, freqs, spec.aamodel,
                 aarevmat, spec.coding)
        key = q_key + (spec.rates, spec.alpha, spec.ngammacat, spec.pinvar)
        model = self._cache.get(key)
        if model is None:
            if len(self._cache) >= self.limit:
                self._cache.clear()
                self._by_q.clear()
            same_q = self._by_q.get(q_key)
            model = self._cache[key] = build_model(spec) if same_q is None else same_q.with_rates(spec)
            self._by_q.setdefault(q_key, model)
        return model
