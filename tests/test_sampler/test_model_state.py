"""mbgpu.sampler.model_state.ModelCache: models built through a shared Q (shape or pinvar proposals)
are exactly the models build_model makes."""
from dataclasses import replace

import numpy as np
import pytest

from mbgpu.models import ModelSpec, build_model
from mbgpu.sampler.model_state import ModelCache

SPECS = [ModelSpec(datatype="dna", nst=6, revmat=(1.0, 4.0, 0.7, 1.2, 3.9, 1.0), statefreqs=np.array([.3, .2, .22, .28]),
                   rates="invgamma", alpha=0.5, pinvar=0.2),
         ModelSpec(datatype="protein", aamodel="wag", rates="gamma", alpha=0.7),
         ModelSpec(datatype="dna", nst=2, kappa=3.0, rates="propinv", pinvar=0.1)]


@pytest.mark.parametrize("spec", SPECS, ids=["gtr-i-g", "wag-g", "hky-i"])
def test_rate_changes_share_q_and_equal_a_fresh_build(spec):
    cache = ModelCache()
    first = cache.get(spec)
    for alpha, pinvar in ((0.31, 0.2), (2.5, 0.05), (0.5, 0.2)):
        s = replace(spec, alpha=alpha, pinvar=pinvar)
        got, want = cache.get(s), build_model(s)
        assert got.q is first.q and got.eigen is first.eigen
        for name in ("frequencies", "q", "category_rates", "category_weights"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
        assert got.pinvar == want.pinvar
        for name in ("values", "vectors", "inverse"):
            assert np.array_equal(getattr(got.eigen, name), getattr(want.eigen, name)), name
    other = cache.get(replace(spec, statefreqs=np.array([0.25] * first.n_states)))
    assert other.q is not first.q


def test_the_cache_is_bounded():
    cache = ModelCache(limit=3)
    for a in (0.1, 0.2, 0.3, 0.4, 0.5):
        cache.get(replace(SPECS[1], alpha=a))
    assert len(cache._cache) <= 3


@pytest.mark.parametrize("spec", SPECS, ids=["gtr-i-g", "wag-g", "hky-i"])
def test_q_changes_share_the_rate_categories_and_equal_a_fresh_build(spec):
    cache = ModelCache()
    first = cache.get(spec)
    changes = [dict(statefreqs=np.full(first.n_states, 1.0 / first.n_states))]
    if spec.datatype == "dna":
        changes.append(dict(revmat=(2.0, 1.0, 1.0, 1.0, 5.0, 1.0), kappa=2.5))
    for change in changes:
        s = replace(spec, **change)
        got, want = cache.get(s), build_model(s)
        assert got.category_rates is first.category_rates
        for name in ("frequencies", "q", "category_rates", "category_weights"):
            assert np.array_equal(getattr(got, name), getattr(want, name)), name
        assert got.pinvar == want.pinvar
        other_rates = cache.get(replace(spec, alpha=3.3, pinvar=0.01))
        both = cache.get(replace(s, alpha=3.3, pinvar=0.01))       # a known Q and known rates: both reused
        assert both.q is got.q and both.category_rates is other_rates.category_rates
        fresh = build_model(replace(s, alpha=3.3, pinvar=0.01))
        assert np.array_equal(both.category_rates, fresh.category_rates) and np.array_equal(both.q, fresh.q)
