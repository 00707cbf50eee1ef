"""Which parameter values each division's model uses, and building (cached) models from them.

A chain's state holds one value array per free parameter (mbgpu.parameters.FreeParameter); a
division's ModelSpec is its base spec (fixed values and settings) with those values filled in.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mbgpu.models import build_model
from mbgpu.param_kinds import KIND, RATIO, SIMPLEX


def spec_with_values(spec, params, values, division: int):
    """`spec` of 1-based `division` with every free parameter that covers it filled in."""
    changes = {}
    for p, v in zip(params, values):
        pk = KIND[p.kind]
        if division not in p.divisions or pk.field is None:
            continue
        if pk.form == RATIO:
            changes[pk.field] = float(v[0] / v[1])
        elif pk.form == SIMPLEX:    # ModelSpec.revmat is a tuple, .statefreqs an array
            x = np.asarray(v / v.sum(), dtype=np.float64)
            changes[pk.field] = tuple(float(y) for y in x) if pk.field == "revmat" else x
        else:
            changes[pk.field] = float(v[0])
    return replace(spec, **changes)


def rate_multiplier(params, values, division: int, fixed: float) -> float:
    """The division's rate multiplier: the free one when ratepr is variable, else the fixed start value."""
    for p, v in zip(params, values):
        if p.kind == "ratemult" and division in p.divisions:
            return float(v[list(p.divisions).index(division)])
    return fixed


class ModelCache:
    """Builds a SubstitutionModel once per distinct spec (keyed by its parameter values). Specs that
    differ only in rate variation (a shape or pinvar proposal) share one Q and its eigensystem; specs
    that differ only in Q (a revmat or frequency proposal) share the rate categories."""

    def __init__(self, limit: int = 256):
        self._cache: dict = {}
        self._by_q: dict = {}
        self._by_rates: dict = {}
        self.limit = limit

    def get(self, spec):
        freqs = None if spec.statefreqs is None else tuple(np.asarray(spec.statefreqs).tolist())
        aarevmat = None if spec.aarevmat is None else tuple(np.asarray(spec.aarevmat).tolist())
        q_key = (spec.datatype, spec.n_states, spec.nst, tuple(spec.revmat), spec.kappa, freqs, spec.aamodel,
                 aarevmat, spec.coding, spec.ordered)
        rate_key = (spec.rates, spec.alpha, spec.ngammacat, spec.pinvar)
        key = q_key + rate_key
        model = self._cache.get(key)
        if model is None:
            if len(self._cache) >= self.limit:
                self._cache.clear()
                self._by_q.clear()
                self._by_rates.clear()
            same_q, same_rates = self._by_q.get(q_key), self._by_rates.get(rate_key)
            if same_q is not None:
                model = same_q.with_rates(spec, same_rates)
            elif same_rates is not None:
                model = same_rates.with_q(spec)
            else:
                model = build_model(spec)
            self._cache[key] = model
            self._by_q.setdefault(q_key, model)
            self._by_rates.setdefault(rate_key, model)
        return model
