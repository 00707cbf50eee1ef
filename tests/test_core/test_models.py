"""Models and parameter priors built in compiled code (mbgpu.core.models) equal the host's
(mbgpu.models through ModelCache, mbgpu.priors.parameter_log_prior) for random parameter values."""
import numpy as np
import pytest

from mbgpu.core.division import PROP, DivisionArrays
from mbgpu.core.layout import ParamLayout
from mbgpu.core.models import PriorTable, SetModel, model_proposal, param_log_prior
from mbgpu.priors import parameter_log_prior
from mbgpu.sampler.model_state import rate_multiplier, spec_with_values
from tests.test_core.build import CYNMIX_PARTS, PRIMATES_GTR, build_chains
from tests.test_core.test_division import _random_matrix

HKY = PRIMATES_GTR.replace("nst=6 rates=invgamma", "nst=2 rates=propinv") + " prset tratiopr=beta(2,3);"
EXPSHAPE = PRIMATES_GTR + " prset shapepr=exponential(2) pinvarpr=uniform(0,0.8);"


def _matrices(evals, evecs, einv, rates, t=0.37):
    e = np.exp(np.multiply.outer(rates * t, evals))                 # (K, S)
    return np.einsum("ik,ck,kj->cij", evecs, e, einv)


def _random_values(params, rng):
    out = []
    for p in params:
        v = np.asarray(p.value, dtype=float)
        if p.kind in ("revmat", "statefreq", "tratio"):
            out.append(rng.dirichlet(np.full(v.size, 3.0)) * (1 if p.kind != "tratio" else 2))
        elif p.kind == "ratemult":
            out.append(v * rng.uniform(0.5, 1.5, v.size))
        elif p.kind == "pinvar":
            out.append(np.array([rng.uniform(0.05, 0.6)]))
        else:
            out.append(np.array([rng.uniform(0.1, 3.0)]))
    return out


def _check(tmp_path, commands):
    chains, params, _s = build_chains(tmp_path, commands, nchains=1)
    ch = chains[0]
    layout = ParamLayout(params)
    table = PriorTable(params, ch.prior_fn.n_chars, layout)
    assert table.ok
    rng = np.random.default_rng(8)
    for j, part in enumerate(ch.parts):
        assert SetModel.describable(part.spec, params, part.division)
        sm = SetModel(part.spec, part.division, part.fixed_mult, params, layout)
        d = DivisionArrays(part.inc.shared, [part.inc])
        for _ in range(15):
            values = _random_values(params, rng)
            theta = layout.pack(values)
            for k, p in enumerate(params):
                got = param_log_prior(table.kind[k], table.args[k], table.alphas[k], table.weights[k],
                                      theta[layout.off[k]:layout.off[k + 1]])
                assert got == pytest.approx(parameter_log_prior(p, ch.prior_fn.n_chars, values[k]), rel=1e-12)
            model = ch.models.get(spec_with_values(part.spec, params, values, part.division))
            mult = rate_multiplier(params, values, part.division, part.fixed_mult)
            assert model_proposal(theta, sm.desc, sm.fixed, sm.s0, sm.pi0, d.evals, d.evecs, d.einv, d.crates,
                                  d.cweights, d.freqs, d.pinvar, d.mult, 0, True)
            d.evals[0, 0], d.evecs[0, 0], d.einv[0, 0] = d.evals[0, PROP], d.evecs[0, PROP], d.einv[0, PROP]
            d.freqs[0, 0] = d.freqs[0, PROP]
            assert model_proposal(theta, sm.desc, sm.fixed, sm.s0, sm.pi0, d.evals, d.evecs, d.einv, d.crates,
                                  d.cweights, d.freqs, d.pinvar, d.mult, 0, False)
            assert d.freqs[0, PROP] == pytest.approx(model.frequencies, rel=1e-13)
            assert d.crates[0, PROP] == pytest.approx(model.category_rates, rel=1e-12)
            assert d.cweights[0, PROP] == pytest.approx(model.category_weights, rel=1e-15)
            assert d.pinvar[0, PROP] == pytest.approx(model.pinvar, rel=1e-15)
            assert d.mult[0, PROP] == pytest.approx(mult, rel=1e-15)
            e = model.eigen
            want = _matrices(e.values, e.vectors, e.inverse, model.category_rates)
            got = _matrices(d.evals[0, PROP], d.evecs[0, PROP], d.einv[0, PROP], d.crates[0, PROP])
            assert got == pytest.approx(want, rel=1e-10, abs=1e-13)


@pytest.mark.parametrize("commands", [PRIMATES_GTR, CYNMIX_PARTS, HKY, EXPSHAPE],
                         ids=["gtr-i-g", "partitions-ratemult", "hky-tratio-propinv", "exponential-uniform"])
def test_compiled_models_and_priors_equal_the_host(tmp_path, commands):
    _check(tmp_path, commands)


def test_protein_fixed_matrix(tmp_path):
    path = _random_matrix(tmp_path, "protein", "ACDEFGHIKLMNPQRSTVWY?")
    _check(tmp_path, "execute %s;\n prset aamodelpr=fixed(wag); lset rates=invgamma;" % path)
