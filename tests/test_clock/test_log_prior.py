"""mbgpu's own path to a clock tree's Gen-0 LnPr: the commands parsed by the Interpreter (prset, calibrate,
constraint, startvals; no mcmc, which still refuses a clock tree), `clock_models`, the start state
(`mbgpu.clock.start_tree.clock_start`) and `mbgpu.clock.log_prior.ln_prior`, against mb-double's Gen-0 LnPr
from the same start tree (JC with fixed equal frequencies: LnPr holds only the clock terms). The cases are
those of test_live_mrbayes.py (assembled by hand there) plus the plan's basic ones; the start-tree errors
carry MrBayes' sentences."""
from __future__ import annotations

import re
import shutil

import pytest

from mbgpu.clock.log_prior import ln_prior
from mbgpu.clock.model import clock_models
from mbgpu.clock.start_tree import clock_start
from mbgpu.errors import ModelError
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP, gen0
from tests.test_clock.test_live_mrbayes import CASES as LIVE
from tests.test_clock.test_live_mrbayes import UNIFORM
from tests.test_clock.trees import DATA, T1, T2, T3, T4

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
ROOT = "constraint root = 1-12;"
CALIBRATED = "%s %s topologypr=constraints(apes) nodeagepr=calibrated" % (APES, UNIFORM)

# name -> (commands, start tree): the plan's basic cases (clocks.md §1-§3) beside the live ones
BASIC = {
    "uniform": (UNIFORM + ";", T2),
    "uniform_gamma_age": (UNIFORM + " treeagepr=gamma(2,3);", T3),
    "uniform_fixed_age": (UNIFORM + " treeagepr=fixed(0.65);", T1),
    "uniform_clockrate_lognormal": (UNIFORM + " clockratepr=lognormal(-1,0.5);", T1),
    "uniform_clockrate_normal": (UNIFORM + " clockratepr=normal(1,0.5);", T1),
    "uniform_clockrate_gamma": (UNIFORM + " clockratepr=gamma(2,4);", T2),
    "birthdeath": ("prset brlenspr=clock:birthdeath;", T1),
    "birthdeath_diversity": ("prset brlenspr=clock:birthdeath sampleprob=0.5 samplestrat=diversity;", T2),
    "birthdeath_cluster": ("prset brlenspr=clock:birthdeath sampleprob=0.5 samplestrat=cluster;", T3),
    "birthdeath_priors": ("prset brlenspr=clock:birthdeath speciationpr=uniform(0.05,2) extinctionpr=beta(2,3);", T1),
    "coalescence": ("prset brlenspr=clock:coalescence;", T1),
    "coalescence_lognormal": ("prset brlenspr=clock:coalescence popsizepr=lognormal(0.5,0.4);", T2),
    "coalescence_normal": ("prset brlenspr=clock:coalescence popsizepr=normal(0.2,0.5);", T1),
    "coalescence_gamma": ("lset ploidy=zlinked; prset brlenspr=clock:coalescence popsizepr=gamma(2,4);", T3),
    "coalescence_uniform": ("prset brlenspr=clock:coalescence popsizepr=uniform(0.1,2);", T1),   # popsize: a draw
    "fossilization": ("prset brlenspr=clock:fossilization;", T2),
    "fossilization_priors": ("prset brlenspr=clock:fossilization speciationpr=exponential(3) extinctionpr=beta(2,2) "
                             "fossilizationpr=beta(3,2);", T1),
    "root_calibrated_bd": ("%s %s prset brlenspr=clock:birthdeath speciationpr=fixed(2) extinctionpr=fixed(0.5) "
                           "topologypr=constraints(root) nodeagepr=calibrated; calibrate root=uniform(0.5,1.0);"
                           % (APES, ROOT), T1),
    "root_calibrated_uniform": ("%s %s %s topologypr=constraints(root) nodeagepr=calibrated; calibrate "
                                "root=uniform(0.5,1.0);" % (APES, ROOT, UNIFORM), T1),
    "apes_lognormal": (CALIBRATED + "; calibrate apes=lognormal(0.2,0.05);", T1),
    "tip_uniform": (UNIFORM + " nodeagepr=calibrated; calibrate Tarsius_syrichta=uniform(0.05,0.15) "
                    "Lemur_catta=fixed(0.05);", T4),
    "igr": (UNIFORM + " clockvarpr=igr;", T1),
    "igr_uniform_variance": (UNIFORM + " clockvarpr=igr igrvarpr=uniform(0.1,2);", T1),   # igrvar: a draw
    "tk02": (UNIFORM + " clockvarpr=tk02;", T1),
    "tk02_uniform_variance": (UNIFORM + " clockvarpr=tk02 tk02varpr=uniform(0.5,3);", T2),  # tk02var: a draw
    "cpp": (UNIFORM + " clockvarpr=cpp;", T1),                                           # cppRate: a draw
    # MrBayes moves a free clock rate into the calibrations' range (to its smallest rate when outside)
    "rate_from_calibration_above": (CALIBRATED + " clockratepr=lognormal(0,1); calibrate apes=uniform(0.2,0.3);", T1),
    "rate_from_calibration_below": (CALIBRATED + " clockratepr=exponential(10); calibrate apes=uniform(0.2,0.3);",
                                    T1),
    "rate_inside_calibration": (CALIBRATED + " clockratepr=lognormal(0,1); calibrate apes=uniform(0.15,0.3);", T1),
    "rate_from_tip_dates": (UNIFORM + " nodeagepr=calibrated clockratepr=exponential(2); calibrate "
                            "Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);", T4),
    "rate_unbounded_calibration": (CALIBRATED + " clockratepr=exponential(0.5); calibrate "
                                   "apes=offsetexponential(0.2,0.3);", T1),
    "nearly_ultrametric": (UNIFORM + ";", T1.replace("Pan:0.05", "Pan:0.0509")),
    "extant_tip_calibrated": (UNIFORM + " nodeagepr=calibrated; calibrate Lemur_catta=uniform(0,0.1);", T1),
    "calibration_not_enforced": (APES + " " + UNIFORM + " nodeagepr=calibrated; calibrate apes=uniform(0.2,0.3);", T1),
    "two_divisions": ("charset a = 1-400; charset b = 401-898; partition p = 2: a, b; set partition=p; "
                      "prset applyto=(all) brlenspr=clock:birthdeath clockratepr=exponential(2); "
                      "prset applyto=(all) statefreqpr=fixed(equal);", T2),
}
STARTVALS = re.compile(r"startvals relative_fossilization=\(([^)]*)\);")
NOT_HERE = {"coal_growth"}          # prset growthpr is not an mbgpu option (MrBayes takes it; not in the help)
CASES = {**{k: (c, t) for k, (c, t, _) in LIVE.items() if k not in NOT_HERE}, **BASIC}


def _settings(tmp_path, commands: str, newick: str):
    """The Settings after the commands and `startvals tau=t1 v=t1` of gen0's file, run by mbgpu."""
    shutil.copy(DATA, tmp_path / "primates.nex")
    it = interp_for("#NEXUS\nbegin mrbayes; execute primates.nex; end;\nbegin trees; tree t1 = [&R] %s\nend;\n"
                    "begin mrbayes; %s %s startvals tau=t1 v=t1;\nend;\n" % (newick, SETUP, commands), tmp_path)
    return it.settings


def _random_draws(model, row: dict) -> dict:
    """The start values MrBayes draws at random (None in ClockModel.starts()), read from its Gen-0 row."""
    return {k: row[k] for k, v in model.starts().items() if v is None}


@pytest.mark.parametrize("case", list(CASES))
def test_ln_prior_from_the_commands_equals_mrbayes_gen0(case, mb_double, tmp_path):
    """Interpreter -> ClockModel -> start state -> ln_prior = mb-double's Gen-0 LnPr (to 1e-6, relative for
    MrBayes' -1e26 of an unbounded calibration), and TH and the clock rate of its row."""
    commands, newick = CASES[case]
    row = {k.split("{")[0]: v for k, v in gen0(mb_double, tmp_path / "mb", commands, newick).items()}
    values = {}
    given = STARTVALS.search(commands)                 # mbgpu's startvals takes tau/V/ratemultiplier only
    if given:
        values["relative_fossilization"] = tuple(float(x) for x in given.group(1).split(","))
        commands = STARTVALS.sub("", commands)
    s = _settings(tmp_path, commands, newick)
    (model,) = clock_models(s)
    state = clock_start(s, model, s.startvals["V"])
    values.update(_random_draws(model, row))
    got = ln_prior(model, state, values)
    assert got == pytest.approx(row["LnPr"], abs=1e-6 + 5e-7 * abs(row["LnPr"])), (case, got, row["LnPr"])
    assert state.depth.max() == pytest.approx(row["TH"], rel=1e-6)
    assert state.clock_rate == pytest.approx(row.get("clockrate", model.clock_rate_start), rel=1e-6)


_INNER = T1[2:T1.rindex(":0.15,Lemur")]        # T1 below the Lemur split: unrooted at Lemur and Tarsius
ERRORS = {
    "not_ultrametric": (UNIFORM + ";", T1.replace("Pan:0.05", "Pan:0.06"),
                        "Node (Pan) is not at the same depth as some other tip taking colibration into account."),
    "tip_dates_undeclared": (UNIFORM + ";", T4, "Node (Tarsius_syrichta) is not at the same depth as some other tip"),
    "tip_dates_without_nodeagepr": (UNIFORM + "; calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);",
                                    T4, "Node (Tarsius_syrichta) is not at the same depth as some other tip"),
    "tip_dates_contradict": (UNIFORM + " nodeagepr=calibrated; calibrate Tarsius_syrichta=fixed(0.2) "
                             "Lemur_catta=fixed(0.05);", T4, "Branch lengths do not satisfy the calibration(s)"),
    "fixed_rate_outside_calibration": (CALIBRATED + "; calibrate apes=fixed(0.2);", T1,
                                       "Fixed branch lengths do not satisfy fixed clockrate"),
    "unrooted": (UNIFORM + ";", "(%s:0.15,Lemur_catta:0.55,Tarsius_syrichta:0.75);" % _INNER,
                 "the given tree has unrooted structure"),
    "multifurcating": (UNIFORM + ";", T1.replace("((Homo_sapiens:0.05,Pan:0.05):0.02,Gorilla:0.07)",
                                                 "(Homo_sapiens:0.07,Pan:0.07,Gorilla:0.07)"),
                       "the given tree has unrooted structure"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_start_tree_errors_carry_mrbayes_sentence(case, mb_double, tmp_path):
    """A start tree MrBayes refuses: mb-double stops with the sentence, mbgpu's one-line ModelError,
    located at the tree, carries it."""
    commands, newick, sentence = ERRORS[case]
    with pytest.raises(AssertionError) as failed:
        gen0(mb_double, tmp_path / "mb", commands, newick)
    assert sentence in str(failed.value)
    s = _settings(tmp_path, commands, newick)
    (model,) = clock_models(s)
    with pytest.raises(ModelError) as e:
        clock_start(s, model, s.startvals["V"])
    assert sentence in e.value.one_line() and ":3:" in e.value.one_line()


def test_fixed_tree_age_other_than_the_start_tree_is_an_error(mb_double, tmp_path):
    """treeagepr=fixed(0.6) with a start tree 0.65 old: MrBayes rescales the tree and charges -1e6
    (clocks.md §0); mbgpu stops instead."""
    commands = "prset brlenspr=clock:birthdeath treeagepr=fixed(0.6);"
    row = gen0(mb_double, tmp_path / "mb", commands, T1)
    assert row["LnPr"] < -999000.0 and row["TH"] != pytest.approx(0.65)
    s = _settings(tmp_path, commands, T1)
    (model,) = clock_models(s)
    with pytest.raises(ModelError, match=r"treeagepr=fixed\(0.6\) fixes the tree age"):
        clock_start(s, model, s.startvals["V"])


def test_a_random_start_value_must_be_given(tmp_path):
    """cppRate's start is a MrBayes draw (starts() None): ln_prior asks for it instead of guessing."""
    s = _settings(tmp_path, *BASIC["cpp"])
    (model,) = clock_models(s)
    state = clock_start(s, model, "t1")
    with pytest.raises(ValueError, match="MrBayes draws cppRate at random"):
        ln_prior(model, state)
    assert ln_prior(model, state, {"cppRate": 0.5}) > ln_prior(model, state, {"cppRate": 5.0})
