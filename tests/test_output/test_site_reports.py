"""`report ancstates=yes siterates=yes`: the .p columns against MrBayes 3.2.7a (mb-double) and against
computations that share no code with mbgpu.output.site_reports (enumeration of ancestral states, one
reference likelihood per rate category).

MrBayes' ancestral states are matched to 1e-7. Its site rates are not: 3.2.7a writes values that are not
a function of the site pattern (two constant sites, all A and all G under a symmetric model, get 0.870 and
0.003 at generation 0; constant sites get exactly 1.0 in another run), so mbgpu writes what MrBayes'
PrintSiteRates_Gen means to compute, the posterior mean rate, checked here independently.
"""
import io
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.likelihood import PartitionLikelihood
from mbgpu.models import ModelSpec, build_model
from mbgpu.output.site_reports import _ancestral, _clade_node, _site_rates
from mbgpu.tree import Tree

from tests.test_mrbayes_gen0 import _strip_mrbayes, _taxa, _user_tree, run_both

DATA = Path(__file__).resolve().parents[1] / "data"


def _cherries(text: str) -> list[str]:
    """Two-taxon clades of the user tree run_both starts from: constraints MrBayes accepts."""
    taxa = _taxa(text)
    tree = Tree.from_newick(_user_tree(taxa), {n: i for i, n in enumerate(taxa)})
    pairs = sorted(sorted(taxa[i] for i in s) for s in tree.splits() if len(s) == 2)
    return [" ".join(p) for p in pairs[:2]]


def _p_file(path: Path) -> dict[str, float]:
    lines = path.read_text().splitlines()
    return dict(zip(lines[1].split("\t"), (float(x) for x in lines[2].split("\t"))))


@pytest.mark.parametrize("model", ["lset rates=invgamma nst=6; prset pinvarpr=fixed(0.3) shapepr=fixed(0.7);",
                                   "lset rates=gamma;"])
def test_ancestral_states_like_mrbayes(model, mb_double, tmp_path, monkeypatch):
    text = _strip_mrbayes((DATA / "primates.nex").read_text())
    a, b = _cherries(text)
    commands = ("%s constraint c1 = %s; constraint c2 = %s; prset topologypr=constraints(c1,c2); "
                "report ancstates=yes siterates=yes;" % (model, a, b))
    run_both(tmp_path, mb_double, monkeypatch, text, commands)
    want, got = _p_file(tmp_path / "mb" / "out.p"), _p_file(tmp_path / "mbgpu" / "out.p")
    assert list(got) == list(want)                          # every column, in MrBayes' order
    anc = [k for k in want if k.startswith("p(")]
    assert len(anc) == 2 * 898 * 4 and anc[0] == "p(A){1@c1}" and anc[-1] == "p(T){898@c2}"
    assert max(abs(got[k] - want[k]) for k in anc) < 1e-7
    assert [k for k in want if re.match(r"r\(\d", k)] == ["r(%d)" % j for j in range(1, 899)]


def test_site_rate_names_count_division_by_division_like_mrbayes(mb_double, tmp_path, monkeypatch):
    """By codon position: MrBayes writes division 1's rates first and names the columns r(1), r(2), ...
    in that order (r(2) is character 4), so the header is mb-double's only if mbgpu numbers them so."""
    text = _strip_mrbayes((DATA / "primates.nex").read_text())
    commands = ("charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
                "partition by_codon = 3: p1, p2, p3; set partition=by_codon; lset rates=gamma; report siterates=yes;")
    run_both(tmp_path, mb_double, monkeypatch, text, commands)
    want, got = _p_file(tmp_path / "mb" / "out.p"), _p_file(tmp_path / "mbgpu" / "out.p")
    assert list(got) == list(want)
    assert [k for k in want if k.startswith("r(")] == ["r(%d)" % j for j in range(1, 899)]


def test_standard_data_columns_like_mrbayes(mb_double, tmp_path, monkeypatch):
    """Mixed data: site rates only where a division has rate variation; ancestral states per division,
    constraint, character (each with its own number of states, excluded ones left out) and state."""
    text = _strip_mrbayes((DATA / "cynmix.nex").read_text())
    a, b = _cherries(text)
    commands = ("partition p = 2: 1-166, 167-3246; set partition=p; exclude 6-160 170-3240; "
                "lset applyto=(2) rates=gamma; constraint c1 = %s; constraint c2 = %s; "
                "prset topologypr=constraints(c1,c2); report ancstates=yes siterates=yes;" % (a, b))
    run_both(tmp_path, mb_double, monkeypatch, text, commands)
    want, got = _p_file(tmp_path / "mb" / "out.p"), _p_file(tmp_path / "mbgpu" / "out.p")
    assert list(got) == list(want)
    assert "p(7){166@c1}" in want and "r(167)" in want and "r(1)" not in want
    standard = [k for k in want if k.startswith("p(") and int(re.search(r"\{(\d+)@", k).group(1)) <= 166]
    assert max(abs(got[k] - want[k]) for k in standard) < 1e-7


def _four_taxa():
    tree = Tree.from_newick("((A:0.1,B:0.25):0.07,C:0.3,D:0.02);", {c: i for i, c in enumerate("ABCD")})
    sites = ["AAGT", "ACGT", "GGGG", "ACAC"]                 # one column per site, taxa A B C D
    tips = np.zeros((4, len(sites), 4))
    for j, col in enumerate(sites):
        for t, ch in enumerate(col):
            tips[t, j, "ACGT".index(ch)] = 1.0
    return tree, tips


@pytest.mark.parametrize("rates", [("gamma", 0.0), ("invgamma", 0.2), ("equal", 0.0)])
def test_ancestral_states_by_enumeration(rates):
    """Every assignment of states to the two internal nodes, summed: the marginal at each."""
    tree, tips = _four_taxa()
    spec = ModelSpec(datatype="dna", nst=2, kappa=3.0, statefreqs=np.array([0.1, 0.2, 0.3, 0.4]),
                     rates=rates[0], alpha=0.6, pinvar=rates[1])
    model = build_model(spec)
    inner = [v for v in range(4, tree.n_nodes)]
    for node in inner:
        got = _ancestral(tree, model, 1.3, tips, node)
        want = np.zeros_like(got)
        for k, r in enumerate(model.category_rates):
            p = model.eigen.transition_matrices(tree.brlen * 1.3 * r)
            for states in itertools.product(range(4), repeat=len(inner)):
                at = dict(zip(inner, states))
                root_state = at[tree.root]
                weight = model.frequencies[root_state] * (1 - model.pinvar) / model.n_categories
                like = np.full(tips.shape[1], weight)
                for v in range(tree.n_nodes):
                    if tree.parent[v] < 0:
                        continue
                    pv = p[v][at[int(tree.parent[v])]]
                    like = like * (pv[at[v]] if v >= 4 else tips[v] @ pv)
                want[:, at[node]] += like
        if model.pinvar > 0:
            want += model.pinvar * model.frequencies[None, :] * np.prod(tips, axis=0)
        np.testing.assert_allclose(got, want / want.sum(axis=1, keepdims=True), rtol=1e-10, atol=1e-14)


def test_site_rates_are_posterior_mean_rates():
    """Each category's site likelihoods from the reference backend on a single-rate model with the branch
    lengths times the category rate; the invariable class adds rate 0."""
    tree, tips = _four_taxa()
    spec = ModelSpec(datatype="dna", nst=2, kappa=2.0, rates="invgamma", alpha=0.5, pinvar=0.25)
    model = build_model(spec)
    single = build_model(ModelSpec(datatype="dna", nst=2, kappa=2.0))
    per_cat = []
    for r in model.category_rates:
        lik = PartitionLikelihood(tips, np.ones(tips.shape[1]), single, rate_multiplier=2.0 * r)
        per_cat.append(np.exp(lik.site_log_likelihoods(tree)))
    per_cat = np.array(per_cat).T * (1 - model.pinvar) / model.n_categories
    inv = model.pinvar * (np.prod(tips, axis=0) @ model.frequencies)
    want = (per_cat @ model.category_rates) / (per_cat.sum(axis=1) + inv)
    np.testing.assert_allclose(_site_rates(tree, model, 2.0, tips), want, rtol=1e-10)


def test_clade_node_is_the_constraint_side_away_from_the_outgroup():
    tree, _ = _four_taxa()
    node = _clade_node(tree, frozenset({0, 1}), outgroup=3)
    assert sorted(tree.children()[node]) == [0, 1]
    node = _clade_node(tree, frozenset({2, 3}), outgroup=3)        # outgroup inside: the other side
    assert sorted(tree.children()[node]) == [0, 1]


def test_reports_in_a_run_and_sump(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n execute %s;\n lset rates=gamma; report siterates=yes;\n"
        " mcmc ngen=200 nruns=1 nchains=1 samplefreq=20 printfreq=100 checkpoint=no filename=o;\n sump;\nend;\n"
        % (DATA / "primates.nex"))
    Interpreter(Console(out)).run_file(str(tmp_path / "cmd.nex"))
    rows = (tmp_path / "o.p").read_text().splitlines()
    assert rows[1].split("\t")[-1] == "r(898)" and len(rows) == 2 + 11
    assert "r(898)" in (tmp_path / "o.pstat").read_text()
