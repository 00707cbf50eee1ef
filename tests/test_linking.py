"""Which divisions share a parameter, decided as MrBayes 3.2.7a decides (engine/parameters.py, the link
state of engine/settings.py and the `link`/`unlink` handler).

Each rule of MrBayes' IsModelSame that mbgpu can meet is checked against mb itself: the same block run
by both, the `.p` headers equal (they name the divisions sharing each free parameter). Where the grouping
changes the model rather than only the names, the Gen-0 LnL and LnPr of a fixed tree equal mb-double's
(tests/test_mrbayes_gen0.py). Linked fixed state frequencies that MrBayes would give a division other
than its own are refused (NotImplementedYet).
"""
import io

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.interpreter import Interpreter
from mbgpu.model_settings import division_spec
from mbgpu.parameters import free_parameters, link_groups
from mbgpu.sampler.model_state import spec_with_values
from tests.conftest import TEST_DATA
from tests.test_mrbayes_gen0 import _strip_mrbayes, assert_same_gen0, run_both
from tests.test_output.mbpeer import p_header, run_mb, run_ours, stage

BY = ("charset p1=1-898\\3; charset p2=2-898\\3; charset p3=3-898\\3; partition bycodon=3:p1,p2,p3;"
      " set partition=bycodon;")
# cynmix.nex's own mrbayes block defines these (tests/data keeps it; the Gen-0 runs strip it)
FAVORED = ("charset morphology=1-166; charset COI=167-1244; charset EF1a=1245-1611; charset LWRh=1612-2092;"
           " charset 28S=2093-3246; partition favored=5:morphology,COI,EF1a,LWRh,28S; set partition=favored;")
AB = "charset a=1-60; charset b=61-.; partition ab=2:a,b; set partition=ab;"

# name: (data, commands, MrBayes' grouping of the parameters concerned: columns NAME{...} or NAME(..){...})
HEADERS = {
    # tratio: the same prior (beta values, fixed value) and nst=2 in both
    "tratio_prior": ("primates", BY + " lset applyto=(all) nst=2; prset applyto=(1) tratiopr=beta(2,3);",
                     "kappa{1} kappa{2,3}"),
    "tratio_fixed": ("primates", BY + " lset applyto=(all) nst=2; prset applyto=(2) tratiopr=fixed(2);",
                     "kappa{1,3}"),
    "tratio_nst": ("primates", BY + " lset applyto=(1,3) nst=2; lset applyto=(2) nst=6;", "kappa{1,3} r{2}"),
    # revmat: the same Dirichlet values; link after unlink
    "revmat_prior": ("primates", BY + " lset applyto=(all) nst=6;"
                     " prset applyto=(2) revmatpr=dirichlet(2,2,2,2,2,2);", "r{1,3} r{2}"),
    "revmat_link": ("primates", BY + " lset applyto=(all) nst=6; unlink revmat=(1,2); link revmat=(1,3);",
                    "r{1,3} r{2}"),
    # statefreq: Dirichlet values; a fixed and a Dirichlet prior do not keep divisions apart (the first
    # division's prior rules), which makes the grouping intransitive; never standard with DNA
    "freq_dirichlet": ("primates", BY + " prset applyto=(3) statefreqpr=dirichlet(2,2,2,2);", "pi{1,2} pi{3}"),
    "freq_fixed_first": ("primates", BY + " prset applyto=(1) statefreqpr=fixed(equal);", "no pi"),
    "freq_intransitive": ("primates", BY + " prset applyto=(2) statefreqpr=fixed(equal);"
                          " prset applyto=(3) statefreqpr=dirichlet(2,2,2,2);", "pi{all}"),
    "freq_intransitive_2": ("primates", BY + " prset applyto=(1) statefreqpr=dirichlet(2,2,2,2);"
                            " prset applyto=(2) statefreqpr=fixed(equal);", "pi{all}"),
    "freq_standard_dna": ("cynmix", " set partition=favored;", "pi{2,3,4,5}"),
    "freq_protein_prior": ("avian_ovomucoids", AB + " prset applyto=(all) aamodelpr=fixed(equalin);"
                           " prset applyto=(2) statefreqpr=dirichlet(2);", "pi{1} pi{2}"),
    "freq_protein_models": ("avian_ovomucoids", AB + " prset applyto=(1) aamodelpr=fixed(equalin);"
                            " prset applyto=(2) aamodelpr=fixed(jones);", "pi{1}"),
    # shape: the number of categories and the prior; never standard with DNA
    "shape_ngammacat": ("primates", BY + " lset applyto=(all) rates=gamma; lset applyto=(2) ngammacat=6;",
                        "alpha{1,3} alpha{2}"),
    "shape_prior": ("primates", BY + " lset applyto=(all) rates=gamma; prset applyto=(3) shapepr=uniform(0.1,50);",
                    "alpha{1,2} alpha{3}"),
    "shape_standard_dna": ("cynmix", " set partition=favored; lset applyto=(all) rates=gamma;",
                           "alpha{1} alpha{2,3,4,5}"),
    # pinvar: the prior; only where rates has invariable sites
    "pinvar_prior": ("primates", BY + " lset applyto=(all) rates=propinv; prset applyto=(1) pinvarpr=uniform(0,0.5);",
                     "pinvar{1} pinvar{2,3}"),
    "pinvar_rates": ("primates", BY + " lset applyto=(1,3) rates=invgamma; lset applyto=(2) rates=gamma;",
                     "alpha{all} pinvar{1,3}"),
    # rate multipliers: ratepr fixed or not (variable and dirichlet(x) are one form)
    "ratemult_some": ("primates", BY + " prset applyto=(1,2) ratepr=variable;", "m{1} m{2}"),
    "ratemult_forms": ("primates", BY + " prset applyto=(1) ratepr=dirichlet(2); prset applyto=(2,3) ratepr=variable;",
                       "m{1} m{2} m{3}"),
}


def _data_path(shared_data, data):
    path = TEST_DATA / (data + ".nex")
    return path if path.exists() else shared_data / "mrbayes" / (data + ".nex")


@pytest.mark.parametrize("case", sorted(HEADERS))
def test_header_like_mrbayes(mb, shared_data, tmp_path, monkeypatch, case):
    data, commands, _ = HEADERS[case]
    folder = stage(tmp_path, _data_path(shared_data, data))
    block = " set seed=1 swapseed=1; execute %s.nex;\n%s\n mcmc ngen=100 nruns=1 nchains=1 samplefreq=100" \
            " printfreq=100 diagnfreq=100 filename=%%s;" % (data, commands)
    run_mb(mb, folder, block % "theirs")
    run_ours(folder, block % "ours", monkeypatch)
    header = p_header(folder / "ours.p")
    assert header == p_header(folder / "theirs.p")
    _assert_grouping(header, HEADERS[case][2])


def _assert_grouping(header: list[str], groups: str) -> None:
    """The header has a column of every `name{divisions}` (`no pi`: no frequency column)."""
    if groups == "no pi":
        assert not [c for c in header if c.startswith("pi(")]
        return
    for group in groups.split():
        name, _, divisions = group.partition("{")
        suffix = "{" + divisions
        assert any(c == group or (c.startswith(name + "(") and c.endswith(suffix)) for c in header), group


GEN0 = {
    # MrBayes never shares alpha between standard and DNA divisions: two shape priors
    "standard_shape": ("cynmix", FAVORED + " lset app=(1) rates=gamma; lset app=(2,3,4,5) rates=invgamma nst=6;"
                       " prset ratepr=variable;"),
    # division 2's fixed(equal) gives way to the shared Dirichlet of divisions 1 and 3
    "freq_priors_differ": ("primates", BY + " lset applyto=(1) rates=gamma; lset applyto=(3) rates=propinv;"
                           " prset applyto=(2) statefreqpr=fixed(equal);"),
    # division 1's fixed(equal) fixes the frequencies of all three
    "freq_fixed_first": ("primates", BY + " prset applyto=(1) statefreqpr=fixed(equal);"
                         " lset applyto=(all) rates=gamma;"),
    # unlinked, each division keeps its own empirical frequencies
    "empirical_unlinked": ("primates", BY + " prset applyto=(all) statefreqpr=fixed(empirical);"
                           " unlink statefreq=(all);"),
    # one rate-multiplier parameter with the divisions' own Dirichlet values (2,1,1)
    "ratemult_forms": ("primates", BY + " prset applyto=(1) ratepr=dirichlet(2); prset applyto=(2,3) ratepr=variable;"),
}


@pytest.mark.parametrize("case", sorted(GEN0))
def test_gen0_like_mrbayes(shared_data, mb_double, tmp_path, monkeypatch, case):
    data, commands = GEN0[case]
    text = _strip_mrbayes(_data_path(shared_data, data).read_text())
    want, got = run_both(tmp_path, mb_double, monkeypatch, text, commands)
    assert_same_gen0(want, got)


def _session(tmp_path, monkeypatch, commands: str, data: str = "primates") -> Interpreter:
    folder = stage(tmp_path, TEST_DATA / (data + ".nex"))
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text("#NEXUS\nbegin mrbayes;\n execute %s.nex;\n%s\nend;\n" % (data, commands))
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(folder / "run.nex"))
    return it


def test_shared_frequencies_replace_a_fixed_prior(tmp_path, monkeypatch):
    """Division 2's fixed(equal) prior is ignored as MrBayes ignores it: its model takes the shared values."""
    it = _session(tmp_path, monkeypatch, BY + " prset applyto=(2) statefreqpr=fixed(equal);")
    params = free_parameters(it.settings)
    (pi,) = [p for p in params if p.kind == "statefreq"]
    assert pi.divisions == (1, 2, 3) and pi.prior.kind == "Dirichlet"
    values = [np.array([1.0, 2.0, 3.0, 4.0]) if p is pi else p.value for p in params]
    spec = spec_with_values(division_spec(it.settings.divisions[1], 2, [], it.settings.defaults["prset"]), params, values, 2)
    assert np.allclose(spec.statefreqs, [0.1, 0.2, 0.3, 0.4])


REFUSED = {
    "empirical_pooled": " prset applyto=(all) statefreqpr=fixed(empirical);",
    "different_user_frequencies": " prset applyto=(1) statefreqpr=fixed(0.1,0.2,0.3,0.4);"
                                  " prset applyto=(2,3) statefreqpr=fixed(0.4,0.3,0.2,0.1);",
    "dirichlet_under_user_frequencies": " prset applyto=(1) statefreqpr=fixed(0.1,0.2,0.3,0.4);",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_linked_fixed_frequencies_other_than_a_divisions_own_are_refused(tmp_path, monkeypatch, case):
    """MrBayes links these divisions' frequencies and fixes all of them to division 1's (pooled over them
    for empirical ones; for user values its IsModelSame compares the Dirichlet values, a bug): mbgpu
    gives each division its own, so it refuses at `mcmc` and names the way out."""
    with pytest.raises(NotImplementedYet, match=r"unlink statefreq=\(1,2,3\)") as err:
        _session(tmp_path, monkeypatch, BY + REFUSED[case] + "\n mcmc ngen=10 nruns=1 nchains=1 filename=r;")
    assert err.value.where is not None and "is not supported yet" in str(err.value)


def test_equal_user_frequencies_may_be_linked(tmp_path, monkeypatch):
    it = _session(tmp_path, monkeypatch, BY + " prset applyto=(all) statefreqpr=fixed(0.1,0.2,0.3,0.4);")
    assert link_groups(it.settings, "statefreq") == [(1, 2, 3)]
    assert not [p for p in free_parameters(it.settings) if p.kind == "statefreq"]


def test_link_state_is_a_group_id_per_division(tmp_path, monkeypatch):
    """unlink: a fresh group each; link: one fresh group for the listed; stored renumbered from 0, and
    not at all when everything is linked again; a parameter named twice in one command keeps its last list."""
    it = _session(tmp_path, monkeypatch, BY + " lset applyto=(all) nst=2 rates=gamma;")
    s = it.settings
    s.unlink("Shape", (1, 2, 3))
    assert s.link_ids("Shape") == (0, 1, 2) and s.link_ids("Tratio") == (0, 0, 0)
    s.link("Shape", (1, 3))
    assert s.unlinked["Shape"] == (0, 1, 0) and link_groups(s, "shape") == [(1, 3), (2,)]
    s.link("Shape", (1, 2, 3))
    assert "Shape" not in s.unlinked and link_groups(s, "shape") == [(1, 2, 3)]
    s.link("Shape", (2,))           # a link of one division takes it out of its group, as in MrBayes
    assert link_groups(s, "shape") == [(1, 3), (2,)]


def test_link_commands(tmp_path, monkeypatch):
    it = _session(tmp_path, monkeypatch, BY + " lset applyto=(all) nst=2 rates=gamma;"
                  " unlink shape=(1) shape=(2,3) tratio=(all); link tratio=(1,2);")
    assert it.settings.unlinked == {"Shape": (0, 1, 2), "Tratio": (0, 0, 1)}
    with pytest.raises(CommandError, match="there are only 3 divisions") as err:
        _session(tmp_path / "b", monkeypatch, BY + " unlink shape=(2,4);")
    assert err.value.where is not None


def test_a_new_partition_links_everything_again(tmp_path, monkeypatch):
    """MrBayes' `set partition=` resets its link table (SetModelDefaults)."""
    it = _session(tmp_path, monkeypatch, BY + " unlink shape=(all); set partition=bycodon;")
    assert it.settings.unlinked == {}
