"""Rate matrices: amino-acid files, nucleotide models, normalisation, eigensystems, empirical freqs."""
import numpy as np
import pytest
from scipy.linalg import expm

from mbgpu.errors import ModelError
from mbgpu.models import AA_MODELS, ModelSpec, build_model, empirical_frequencies, load_aamodel
from mbgpu.models.aamatrices import EMPIRICAL_MODELS, aa_revmat_to_matrix


def check_q(model):
    q, pi = model.q, model.frequencies
    assert np.abs(q.sum(axis=1)).max() < 1e-13
    assert -np.dot(pi, np.diag(q)) == pytest.approx(1.0, abs=1e-13)
    assert np.allclose(pi[:, None] * q, (pi[:, None] * q).T, atol=1e-14)       # reversible
    for t in (0.01, 0.3, 2.0):
        assert np.allclose(model.eigen.transition_matrices(np.array(t)), expm(q * t), atol=1e-12)


@pytest.mark.parametrize("name", EMPIRICAL_MODELS)
def test_aa_file_loads_symmetric(name):
    s, pi = load_aamodel(name)
    assert s.shape == (20, 20) and np.allclose(s, s.T) and np.all(np.diag(s) == 0)
    assert np.all(s >= 0) and s.sum() > 0      # dayhoff and mtmam have some zero exchangeabilities
    assert pi.sum() == pytest.approx(1.0) and np.all(pi > 0)


@pytest.mark.parametrize("name", [m for m in AA_MODELS if m != "gtr"])
def test_aa_rate_matrix(name):
    check_q(build_model(ModelSpec(datatype="protein", aamodel=name)))


def test_wag_first_entries():
    s, pi = load_aamodel("wag")
    assert s[1, 0] == 0.551571 and s[2, 1] == 0.635346
    assert pi[0] == pytest.approx(0.0866279, rel=1e-5)


def test_aa_gtr_and_equalin():
    rates = np.arange(1, 191, dtype=float)
    s = aa_revmat_to_matrix(rates)
    assert s[0, 1] == 1.0 and s[0, 2] == 2.0 and s[1, 2] == 20.0 and s[18, 19] == 190.0
    pi = np.linspace(1, 2, 20)
    m = build_model(ModelSpec(datatype="protein", aamodel="gtr", aarevmat=rates, statefreqs=pi))
    check_q(m)
    assert m.frequencies == pytest.approx(pi / pi.sum())
    e = build_model(ModelSpec(datatype="protein", aamodel="equalin", statefreqs=pi))
    assert e.frequencies == pytest.approx(pi / pi.sum())
    with pytest.raises(ModelError):
        build_model(ModelSpec(datatype="protein", aamodel="gtr"))
    with pytest.raises(ModelError):
        build_model(ModelSpec(datatype="protein", aamodel="nosuch"))


def test_jc_closed_form():
    m = build_model(ModelSpec(datatype="dna", nst=1))
    check_q(m)
    t = 0.37
    p = m.eigen.transition_matrices(np.array(t))
    assert p[0, 0] == pytest.approx(0.25 + 0.75 * np.exp(-4 * t / 3), abs=1e-15)
    assert p[0, 1] == pytest.approx(0.25 - 0.25 * np.exp(-4 * t / 3), abs=1e-15)


def test_k80_hky_gtr():
    pi = np.array([0.36, 0.32, 0.08, 0.24])
    k80 = build_model(ModelSpec(datatype="dna", nst=2, kappa=4.0))
    check_q(k80)
    assert k80.q[0, 2] / k80.q[0, 1] == pytest.approx(4.0)          # A->G transition vs A->C
    hky = build_model(ModelSpec(datatype="dna", nst=2, kappa=4.0, statefreqs=pi * 10))
    check_q(hky)
    assert hky.frequencies == pytest.approx(pi)
    assert hky.q[1, 3] / hky.q[1, 0] == pytest.approx(4.0 * pi[3] / pi[0])   # C->T vs C->A
    rev = (0.04, 0.47, 0.035, 0.035, 0.39, 0.03)
    gtr = build_model(ModelSpec(datatype="dna", nst=6, revmat=rev, statefreqs=pi))
    check_q(gtr)
    same = build_model(ModelSpec(datatype="dna", nst=6, revmat=tuple(10 * r for r in rev), statefreqs=pi))
    assert np.allclose(gtr.q, same.q, atol=1e-14)                     # revmat scale is irrelevant
    assert gtr.q[2, 3] / gtr.q[2, 0] == pytest.approx(0.03 * pi[3] / (0.47 * pi[0]))


def test_standard_mk_and_rates():
    m = build_model(ModelSpec(datatype="standard", n_states=3, rates="invgamma", alpha=0.5, pinvar=0.2))
    check_q(m)
    assert m.n_states == 3 and m.pinvar == 0.2 and m.n_categories == 4
    assert np.dot(m.category_rates, m.category_weights) * (1 - m.pinvar) == pytest.approx(1.0)
    p = build_model(ModelSpec(datatype="dna", rates="propinv", pinvar=0.25))
    assert p.category_rates.tolist() == [1.0 / 0.75]


@pytest.mark.parametrize("bad", [dict(nst=3), dict(rates="gamma", alpha=0.0), dict(rates="propinv", pinvar=1.0),
                                 dict(datatype="standard", n_states=1), dict(coding="variable"),
                                 dict(statefreqs=(1.0, 2.0)), dict(datatype="xyz")])
def test_invalid_specs(bad):
    with pytest.raises(ModelError):
        build_model(ModelSpec(**{"datatype": "dna", **bad}))


def test_empirical_frequencies_like_mrbayes():
    # one taxon A, one taxon R (A or G), one missing: A gets 1 + 1/2 + 1/4, G 1/2 + 1/4, C and T 1/4
    tips = np.array([[[1, 0, 0, 0.0]], [[1, 0, 1, 0.0]], [[1, 1, 1, 1.0]]])
    f = empirical_frequencies(tips, np.array([2.0]))
    assert f == pytest.approx(np.array([1.75, 0.25, 0.75, 0.25]) / 3.0)
