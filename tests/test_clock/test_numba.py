"""The clock priors are written for numba (plain loops over arrays): every kernel compiles in nopython
mode and gives the result of its plain-Python body (`py_func`, its callees compiled)."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from tests.test_clock.trees import APES, T1, T4, TAXA, age_prior, arrays, flags, mrca

numba = pytest.importorskip("numba")

KERNELS = {
    "special": ["ln_gamma", "ln_factorial", "cdf_normal"],
    "distributions": ["ln_density", "ln_gamma_pdf", "ln_lognormal_pdf", "_ln_lognormal_mean_sd"],
    "rooted": ["children", "root_of", "internal_postorder", "branch_lengths"],
    "tree_priors": ["tree_age_term", "ln_calibrations", "ln_uniform", "_colour_clusters", "_dated_tip_depths",
                    "_subtree_term", "_ln_p0", "_ln_p1", "_ln_p1_subsample", "ln_birth_death", "ln_coalescent"],
    "fossilized": ["_intervals", "_slice_of", "_ln_q", "_ln_pi", "_slices", "ln_fossilized_bd", "_ln_sampled_ancestor",
                   "_ln_fossil_tip", "_diversity_cut", "_ln_p1_fossil", "_fossil_tip"],
    "relaxed": ["ln_tk02_lognormal", "ln_igr_rates", "ln_tk02_rates", "ln_cpp_events"],
}


@pytest.fixture(scope="module")
def jitted():
    """{name: numba dispatcher} of every kernel (each module decorates its own)."""
    out = {}
    for mod, names in KERNELS.items():
        module = importlib.import_module("mbgpu.clock." + mod)
        out.update({name: getattr(module, name) for name in names})
    assert all(hasattr(f, "py_func") for f in out.values())
    return out


def test_compiled_priors_equal_interpreted(jitted):
    from mbgpu.clock import fossilized, relaxed, tree_priors as tp
    kind, p = age_prior("gamma", 1, 1)
    parent, depth, n = arrays(T1)
    apes = mrca(parent, APES)
    dated = flags(parent.size, [apes])
    args = (parent, depth, n, 1.0, kind, p, dated, flags(parent.size, [apes, mrca(parent, TAXA[7:11])]))
    assert jitted["ln_uniform"](*args) == pytest.approx(tp.ln_uniform.py_func(*args), abs=1e-12)
    tip_parent, tip_depth, _ = arrays(T4)
    args = (tip_parent, tip_depth, n, 1.0, kind, p, flags(parent.size, [0, 1]), flags(parent.size))
    assert jitted["ln_uniform"](*args) == pytest.approx(tp.ln_uniform.py_func(*args), abs=1e-12)
    for strategy in (tp.RANDOM, tp.DIVERSITY, tp.CLUSTER):
        args = (parent, depth, n, 0.5, 0.1, 0.9, 0.5, strategy, kind, p, False)
        assert jitted["ln_birth_death"](*args) == pytest.approx(tp.ln_birth_death.py_func(*args), abs=1e-12)
    for growth in (0.0, 2.0):
        assert jitted["ln_coalescent"](parent, depth, n, 2.0, growth) == pytest.approx(
            tp.ln_coalescent.py_func(parent, depth, n, 2.0, growth), abs=1e-12)
    for strategy in (tp.RANDOM, tp.DIVERSITY, tp.FOSSILTIP):
        args = (tip_parent, tip_depth, n, 1.0, 0.1, 0.9, np.array([0.1]), 0.5, strategy, kind, p, False, np.zeros(0))
        assert jitted["ln_fossilized_bd"](*args) == pytest.approx(fossilized.ln_fossilized_bd.py_func(*args), abs=1e-12)
        if strategy == tp.FOSSILTIP:
            continue
        args = args[:6] + (np.array([0.1, 0.3, 0.2]),) + args[7:12] + (np.array([0.3, 0.08]),)
        assert jitted["ln_fossilized_bd"](*args) == pytest.approx(fossilized.ln_fossilized_bd.py_func(*args), abs=1e-12)
    rates = np.linspace(0.5, 1.5, parent.size)
    for name in ("ln_igr_rates", "ln_tk02_rates"):
        want = getattr(relaxed, name).py_func(parent, depth, rates, 0.3)
        assert jitted[name](parent, depth, rates, 0.3) == pytest.approx(want, abs=1e-12)
    events, mults = np.ones(parent.size, dtype=np.int64), np.full((parent.size, 1), 1.3)
    assert jitted["ln_cpp_events"](parent, depth, events, mults, 0.2, 0.4) == pytest.approx(
        relaxed.ln_cpp_events.py_func(parent, depth, events, mults, 0.2, 0.4), abs=1e-12)
    ages, kinds, params = depth, np.full(parent.size, -1), np.zeros((parent.size, 3))
    kinds[apes], params[apes] = 1, (0.15, 0.25, 0.0)
    assert jitted["ln_calibrations"](ages, kinds, params) == pytest.approx(math.log(10), abs=1e-12)
