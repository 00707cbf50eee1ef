"""`mcmc` on a fossilized birth-death clock tree (`prset brlenspr=clock:fossilization`, strict clock) against
mb-double: the Gen-0 `.p` row and `.t` file from startvals trees with fossil tips and sampled ancestors (and
fossil-sampling rate shifts), the random start with tip dates, and the sampled distributions of the prior
(`data=no`) and of a posterior (TH, TL, net_speciation, relative_extinction, relative_fossilization,
prop_ancfossil, clock rate) within Monte Carlo error. The moves are mbgpu.clock.chain_fbd_moves' (AddBranch,
DelBranch, Slider(Relative_fossilization), ExtFossilSprClock) beside the strict-clock ones."""
from __future__ import annotations

import math
import re
import shutil
import subprocess

import numpy as np
import pytest

from mbgpu.errors import ModelError
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP
from tests.test_clock.test_chain_gen0 import _file, _gen0, _run_both, _trees_to_gen0
from tests.test_clock import test_chain_sampling as cs
from tests.test_clock.trees import DATA, T1, T4

FBD = "prset brlenspr=clock:fossilization nodeagepr=calibrated"
FOSSILS = FBD + "; calibrate Tarsius_syrichta=fixed(0.1) "
SAMPLED_ANCESTOR = T4.replace("Lemur_catta:0.5", "Lemur_catta:0.0")          # Lemur on a zero-length branch
T1_REVERSED = ("(Tarsius_syrichta:0.65,(Lemur_catta:0.55,(Saimiri_sciureus:0.4,((M_sylvanus:0.1,(M_fascicularis:0.06,"
               "(M_mulatta:0.03,Macaca_fuscata:0.03):0.03):0.04):0.12,(Hylobates:0.18,(Pongo:0.12,(Gorilla:0.07,"
               "(Pan:0.05,Homo_sapiens:0.05):0.02):0.05):0.06):0.04):0.18):0.15):0.1);")
# name -> (model commands, clock commands, start tree)
CASES = {
    "fossil_tips": (SETUP, FOSSILS + "Lemur_catta=fixed(0.05);", T4),
    "fossil_tips_free_rate": (SETUP, FBD + " clockratepr=exponential(2) speciationpr=exponential(5) "
                              "extinctionpr=beta(2,2) fossilizationpr=beta(2,5); calibrate "
                              "Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.02,0.08);", T4),
    "sampled_ancestor": (SETUP, FOSSILS + "Lemur_catta=fixed(0.55);", SAMPLED_ANCESTOR),
    "sampled_ancestor_first": (SETUP, FOSSILS + "Lemur_catta=fixed(0.55);",
                               T1_REVERSED.replace("Lemur_catta:0.55", "Lemur_catta:0.0")
                               .replace("Tarsius_syrichta:0.65", "Tarsius_syrichta:0.55")),
    "fossil_shifts": (SETUP, FOSSILS + "Lemur_catta=fixed(0.55); prset samplestrat=random 2: 0.55 0.2;",
                      SAMPLED_ANCESTOR),
    "diversity": (SETUP, FOSSILS + "Lemur_catta=fixed(0.05); prset samplestrat=diversity sampleprob=0.5;", T4),
    "fossiltip": (SETUP, FOSSILS + "Lemur_catta=fixed(0.05); prset samplestrat=fossiltip;", T4),
    "hky_gamma": ("lset nst=2 rates=gamma;", FOSSILS + "Lemur_catta=uniform(0.02,0.08); prset "
                  "clockratepr=lognormal(0,1);", T4),
    # relaxed clocks: the sampled ancestor's zero-length branch has no rate term and no effective length
    "igr_sampled_ancestor": (SETUP, FOSSILS + "Lemur_catta=fixed(0.55); prset clockvarpr=igr;", SAMPLED_ANCESTOR),
    "igr_fossil_tips": ("lset nst=2 rates=gamma;", FOSSILS + "Lemur_catta=fixed(0.05); prset clockvarpr=igr "
                        "igrvarpr=exponential(5);", T4),
    "tk02_sampled_ancestor": (SETUP, FOSSILS + "Lemur_catta=fixed(0.55); prset clockvarpr=tk02;",
                              SAMPLED_ANCESTOR),
    "tk02_fossil_tips": (SETUP, FOSSILS + "Lemur_catta=fixed(0.05); prset clockvarpr=tk02 tk02varpr=exponential(2);",
                         T4),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gen0_row_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    text = _file(*CASES[case])
    _run_both(text, mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    assert our_row == pytest.approx(row, rel=1e-6)
    assert _trees_to_gen0(tmp_path / "ours" / "x.t") == _trees_to_gen0(tmp_path / "mb" / "x.t")


@pytest.mark.parametrize("clock", [FOSSILS + "Lemur_catta=fixed(0.05);",
                                   FBD + " clockratepr=exponential(2) treeagepr=uniform(2,5); calibrate "
                                   "Tarsius_syrichta=uniform(0.5,1) Lemur_catta=fixed(0.3);"])
def test_random_start_with_tip_dates(clock, mb_double, tmp_path, monkeypatch):
    """Without startvals both start from MrBayes' random clock tree (fossil tips at their calibration
    minimum, the root at 1.5 x the oldest): TH, the clock rate and prop_ancfossil agree at Gen 0 and the
    .p headers are the same (LnPr depends on the random topology)."""
    text = _file(SETUP, clock, T1).replace(" startvals tau=t1 v=t1;", "")
    _run_both(text, mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    keep = [i for i, h in enumerate(head) if h in ("TH", "clockrate", "prop_ancfossil", "net_speciation",
                                                     "relative_extinction", "relative_fossilization")]
    assert len(keep) >= 3
    assert [our_row[i] for i in keep] == pytest.approx([row[i] for i in keep], rel=1e-6)


def test_cluster_sampling_is_mrbayes_error(mb_double, tmp_path, monkeypatch):
    """samplestrat=cluster under the FBD prior: MrBayes stops at its first move with this sentence; mbgpu
    refuses the mcmc command with it."""
    text = _file(SETUP, FOSSILS + "Lemur_catta=fixed(0.05); prset samplestrat=cluster;", T4)
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "cmd.nex").write_text(text)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=120)
    sentence = "Sampling strategy Cluster for fossilized birth-death process not implemented"
    assert done.returncode != 0 and sentence in done.stdout
    shutil.copy(DATA, tmp_path / "primates.nex")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelError) as e:
        interp_for(text, tmp_path, "cmd.nex")
    assert sentence in e.value.one_line()


# name -> (commands, start tree, generations, columns compared): the prior (data=no) of the FBD tree with two
# fossil tips whose ages are free, so AddBranch / DelBranch make and unmake sampled ancestors
PRIOR = {
    "fbd_free_rate": (SETUP + FBD + " clockratepr=exponential(2) speciationpr=exponential(5) extinctionpr=beta(2,2) "
                      "fossilizationpr=beta(2,5) treeagepr=uniform(0.5,1.5); calibrate "
                      "Tarsius_syrichta=uniform(0.05,0.3) Lemur_catta=uniform(0.02,0.2);", T4, 200000,
                      ("TH", "TL", "prop_ancfossil", "net_speciation", "relative_extinction",
                       "relative_fossilization", "clockrate")),
    # one fossil-sampling rate shift at age 0.15: two relative_fossilization values, under the header's
    # empty name and relative_fossilization_1 (MrBayes' names, one off)
    "fbd_shift": (SETUP + FBD + " clockratepr=exponential(2) speciationpr=exponential(5) extinctionpr=beta(2,2) "
                  "fossilizationpr=beta(2,5) treeagepr=uniform(0.5,1.5) samplestrat=random 1: 0.15; calibrate "
                  "Tarsius_syrichta=uniform(0.05,0.3) Lemur_catta=uniform(0.02,0.2);", T4, 200000,
                  ("TH", "TL", "prop_ancfossil", "net_speciation", "relative_extinction", "",
                   "relative_fossilization_1")),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PRIOR))
def test_prior_sampling_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, newick, ngen, columns = PRIOR[case]
    out = cs._runs(tmp_path, monkeypatch, mb_double, commands, newick, ngen, data=False)
    cs._check_means(out, columns)


# the posterior of primates under HKY+G with Tarsius and Lemur dated as fossils and Lemur's sequence all N (a
# fossil without molecular data: its place and age follow the FBD prior, so it is often a sampled ancestor);
# ParsSPRClock off (MrBayes' ParsSPRClock shifts Lemur's placement under FBD: see
# docs/plans/clocks-integration.md, "FBD in the sampler")
POSTERIOR = {
    "fbd_fossil_without_data": (
        "lset nst=2 rates=gamma; " + FBD + " speciationpr=exponential(5) extinctionpr=beta(2,2) "
        "fossilizationpr=beta(2,5) treeagepr=uniform(0.5,1.5); calibrate Tarsius_syrichta=uniform(0.01,0.3) "
        "Lemur_catta=uniform(0.02,0.4); mcmcp nruns=1 nchains=1; propset ParsSPRClock(Tau,V)$prob=0;", T4, 100000,
        ("LnL", "TH", "TL", "prop_ancfossil", "net_speciation", "relative_extinction", "relative_fossilization")),
}


SEEDS = range(7, 13)
Z_MAX = 4.5          # |difference of the programs' means over SEEDS| / its standard error
CLADE_FLOOR = 0.02   # clade frequencies closer than this pass (a clade both programs almost never sample)


def _without_data(taxon: str) -> str:
    """The primates matrix with `taxon`'s sequence replaced by N (all states: no information)."""
    return re.sub(r"^(%s\s+)(\S+)" % taxon, lambda m: m.group(1) + "N" * len(m.group(2)), DATA.read_text(),
                  flags=re.M)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(POSTERIOR))
def test_posterior_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    """Over SEEDS runs per program: the column means and clade frequencies agree within Z_MAX standard errors
    of their difference, taken from the spread of the runs' values. The fossil's placement mixes slowly: one
    run's clade frequency differs from MrBayes' by up to 0.12 (25 seeds each, session 49), so one run
    against one run cannot tell a real difference from Monte Carlo error."""
    commands, newick, ngen, columns = POSTERIOR[case]
    means, clades = {"mb": [], "ours": []}, {"mb": [], "ours": []}
    for seed in SEEDS:
        folder = tmp_path / str(seed)
        folder.mkdir()
        matrix = folder / "primates_lemur_n.nex"
        matrix.write_text(_without_data("Lemur_catta"))
        seeded = "set seed=%d swapseed=%d; %s" % (seed, seed, commands)
        out = cs._runs(folder, monkeypatch, mb_double, seeded, newick, ngen, data=True, matrix=matrix)
        for who, (table, tfile) in out.items():
            means[who].append({col: table[col].mean() for col in columns})
            clades[who].append(cs._clades(tfile)[0])
    for name, runs in (("column", means), ("clade", clades)):
        for key in set().union(*runs["mb"], *runs["ours"]):
            a, b = (np.array([run.get(key, 0.0) for run in runs[who]]) for who in ("mb", "ours"))
            se = math.hypot(a.std(ddof=1), b.std(ddof=1)) / math.sqrt(len(SEEDS))
            diff = abs(a.mean() - b.mean())
            assert diff < CLADE_FLOOR * (name == "clade") or diff < Z_MAX * se, (
                name, sorted(key) if name == "clade" else key, a.mean(), b.mean(), se)


def test_deleted_taxa_renumber_the_calibrations(tmp_path):
    """`delete Homo_sapiens` renumbers the taxa after it: the run's view (mbgpu.deleted_taxa) carries the tip
    and clade calibrations over the included taxa (else Saimiri's age would date node 11, an interior node
    of the 11-taxon tree; hymfossil.nex's `delete Lepid_Micropterigidae` hit this); a deleted calibrated
    taxon is refused."""
    from mbgpu.clock.model import clock_models
    from mbgpu.deleted_taxa import analysis_settings
    from mbgpu.errors import NotImplementedYet

    shutil.copy(DATA, tmp_path / "primates.nex")
    text = ("#NEXUS\nbegin mrbayes; execute primates.nex;\n%s; constraint apes = Homo_sapiens Pan Gorilla Pongo "
            "Hylobates; prset topologypr=constraints(apes); calibrate Lemur_catta=fixed(0.05) "
            "Saimiri_sciureus=uniform(0.2,0.3) apes=uniform(0.1,0.4); delete Homo_sapiens;\nend;\n" % FBD)
    view = analysis_settings(interp_for(text, tmp_path).settings)
    (model,) = clock_models(view)
    assert {c.name: sorted(c.taxa) for c in model.tip_calibrations} == {"Lemur_catta": [1], "Saimiri_sciureus": [10]}
    assert {c.name: sorted(c.taxa) for c in model.node_calibrations} == {"apes": [2, 3, 4, 5]}
    gone = interp_for(text.replace("delete Homo_sapiens", "delete Lemur_catta"), tmp_path).settings
    with pytest.raises(NotImplementedYet, match="calibrate of the deleted taxon Lemur_catta"):
        analysis_settings(gone)
