"""The clock settings (prset's clock options, calibrate) and what they build (mbgpu.clock.model.ClockModel,
the `.p` header of a clock analysis), against mb-double run now: its `.p` header and Gen-0 row after
`mcmc ngen=1` for every tree prior, clock-rate prior, relaxed clock and a calibrated / tip-dated case, the
lines it echoes, and its calibrate errors; what `mcmc` and `ss` still refuse, at the command."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from mbgpu.clock.distributions import LOGNORMAL_MEAN_SD, UNIFORM
from mbgpu.clock.model import clock_models
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.output.paramnames import clock_pfile_header
from mbgpu.parameters import free_parameters
from tests.helpers import interp_for, output
from tests.test_clock.trees import DATA, T1

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
PART = "charset a = 1-400; charset b = 401-898; partition p = 2: a, b; set partition=p;"
TIPS = "calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=uniform(0.05,0.15);"

# name -> the commands (before `mcmc ngen=1`), one per tree prior, clock-rate prior, relaxed clock, fixed
# parameters, fossil-sampling shifts (MrBayes' header quirk), calibrated and tip-dated trees, partitions
CASES = {
    "uniform": "prset brlenspr=clock:uniform;",
    "uniform_exp": "prset brlenspr=clock:uniform clockratepr=exponential(2);",
    "uniform_lognormal": "prset brlenspr=clock:uniform clockratepr=lognormal(-1,0.5) statefreqpr=fixed(equal);",
    "uniform_normal": "prset brlenspr=clock:uniform clockratepr=normal(2,0.5);",
    "uniform_gamma": "prset brlenspr=clock:uniform clockratepr=gamma(2,4) treeagepr=fixed(2);",
    "birthdeath": "prset brlenspr=clock:birthdeath speciationpr=exponential(5) extinctionpr=beta(2,3);",
    "birthdeath_fixed": "prset brlenspr=clock:birthdeath speciationpr=fixed(2) extinctionpr=fixed(0.5);",
    "birthdeath_uniform": "prset brlenspr=clock:birthdeath speciationpr=uniform(1,3) samplestrat=diversity "
                          "sampleprob=0.5;",
    "coalescence": "prset brlenspr=clock:coalescence;",
    "coalescence_fixed": "prset brlenspr=clock:coalescence popsizepr=fixed(0.5);",
    "coalescence_lognormal": "lset ploidy=haploid; prset brlenspr=clock:coalescence popsizepr=lognormal(1,2) "
                             "clockratepr=exponential(4);",
    "coalescence_normal": "prset brlenspr=clock:coalescence popsizepr=normal(2,1);",
    "fossilization": "prset brlenspr=clock:fossilization;",
    "fossilization_fixed": "prset brlenspr=clock:fossilization speciationpr=fixed(1) extinctionpr=fixed(0.5) "
                           "fossilizationpr=fixed(0.1);",
    "fossilization_shifts": "prset brlenspr=clock:fossilization samplestrat=random 2: 0.5 0.2;",
    "fossilization_shifts_fixed": "prset brlenspr=clock:fossilization samplestrat=random 1: 0.5 "
                                  "fossilizationpr=fixed(0.1);",
    "fossilization_diversity_shift": "prset brlenspr=clock:fossilization samplestrat=diversity 1: 0.3 "
                                     "sampleprob=0.5;",
    "fossiltip": "prset brlenspr=clock:fossilization samplestrat=fossiltip;",
    "shifts_forgotten": "prset brlenspr=clock:fossilization samplestrat=random 2: 0.5 0.2; "
                        "prset samplestrat=diversity;",
    "shifts_kept": "prset brlenspr=clock:fossilization samplestrat=random 2: 0.5 0.2; prset sampleprob=0.5;",
    "igr": "prset brlenspr=clock:uniform clockvarpr=igr clockratepr=lognormal(0,1);",
    "igr_exp": "prset brlenspr=clock:uniform clockvarpr=igr igrvarpr=exponential(4);",
    "igr_fixed": "prset brlenspr=clock:uniform clockvarpr=igr igrvarpr=fixed(0.5);",
    "tk02": "prset brlenspr=clock:uniform clockvarpr=tk02;",
    "tk02_exp": "prset brlenspr=clock:birthdeath clockvarpr=tk02 tk02varpr=exponential(3) clockratepr=normal(1,0.5);",
    "cpp": "prset brlenspr=clock:uniform clockvarpr=cpp;",
    "cpp_fixed": "prset brlenspr=clock:uniform clockvarpr=cpp cppratepr=fixed(2);",
    "cpp_coalescence": "prset brlenspr=clock:coalescence clockvarpr=cpp clockratepr=exponential(1);",
    "cpp_fossilization": "prset brlenspr=clock:fossilization clockvarpr=cpp;",
    "tipdated_fbd_igr": "prset brlenspr=clock:fossilization clockvarpr=igr clockratepr=gamma(2,4) "
                        "nodeagepr=calibrated; " + TIPS,
    "calibrated": APES + " prset brlenspr=clock:uniform topologypr=constraints(apes) nodeagepr=calibrated "
                  "clockratepr=lognormal(0,1); calibrate apes=uniform(0.15,0.25);",
    "gtr": "lset nst=6 rates=invgamma; prset brlenspr=clock:fossilization clockvarpr=tk02 "
           "clockratepr=exponential(2);",
    "partitioned": PART + " lset applyto=(all) rates=gamma; unlink shape=(all); prset brlenspr=clock:birthdeath "
                   "clockvarpr=igr clockratepr=exponential(2);",
    "partitioned_cpp_fbd": PART + " prset brlenspr=clock:fossilization clockvarpr=cpp;",
}


def _mrbayes(mb_double, folder, commands: str) -> tuple[list[str], list[str], str]:
    """mb-double's `.p` header and Gen-0 row (after Gen LnL LnPr) and its screen."""
    folder.mkdir()
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=1 swapseed=1;\nexecute primates.nex;\n%s\nmcmc ngen=1 samplefreq=1 "
        "printfreq=1 nchains=1 nruns=1 mcmcdiagn=no checkpoint=no filename=x;\nend;\n" % commands)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    lines = (folder / "x.p").read_text().splitlines()
    return lines[1].split("\t")[3:], lines[2].split("\t")[3:], done.stdout


def _ours(tmp_path, commands: str):
    shutil.copy(DATA, tmp_path / "primates.nex")
    return interp_for("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\nend;\n" % commands, tmp_path)


_ECHOED = re.compile(r"(Setting (Brlenspr|Treeagepr|Clockratepr|Speciationpr|Extinctionpr|Fossilizationpr|"
                     r"Sampleprob|SampleStrat|Popsizepr|Nodeagepr|Clockvarpr|Igrvarpr|TK02varpr|Cppratepr|"
                     r"Cppmultdevpr) to |Setting \d+ fossil sampling|Setting age of |Resetting previous calibration)")


def _setting_lines(text: str) -> list[str]:
    """The lines MrBayes echoes for the clock options and calibrate (mbgpu echoes only those)."""
    return [ln.strip() for ln in text.splitlines() if _ECHOED.match(ln.strip())]


ECHOES = ("prset brlenspr=clock:fossilization treeagepr=gamma(2,3) clockratepr=normal(1,0.5) speciationpr=exp(5) "
          "extinctionpr=beta(2,3) fossilizationpr=fixed(0.1) sampleprob=0.5 samplestrat=random 2: 0.5 0.2 "
          "popsizepr=fixed(0.5) nodeagepr=calibrated clockvarpr=igr igrvarpr=exp(2) tk02varpr=fixed(0.5) "
          "cppratepr=exponential(1) cppmultdevpr=fixed(0.5); prset applyto=(2) treeagepr=fixed(1) "
          "clockratepr=exponential(1) popsizepr=normal(1,0.1) popsizepr=lognormal(0,1) clockratepr=lognormal(0,1);")


@pytest.mark.parametrize("partition", ["", PART], ids=["one division", "two divisions"])
def test_every_clock_option_echoes_as_in_mrbayes(partition, mb_double, tmp_path):
    """MrBayes' `Setting ... to ...` lines of every clock option, partitioned too (its quirks: treeagepr
    without ` for partition N`, clockratepr with it only under a partial applyto)."""
    commands = partition + " " + ECHOES.replace("applyto=(2)", "applyto=(2)" if partition else "")
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "e.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\nend;\n" % commands)
    screen = subprocess.run([str(mb_double), "e.nex"], cwd=tmp_path / "mb", capture_output=True, text=True).stdout
    theirs = _setting_lines(screen.split("Returning execution to calling file")[-1])
    assert len(theirs) > 20 and _setting_lines(output(_ours(tmp_path, commands))) == theirs


@pytest.mark.parametrize("case", list(CASES))
def test_header_start_values_and_echo_like_mrbayes(case, mb_double, tmp_path):
    """The `.p` header MrBayes writes for the clock model = clock_pfile_header's, its Gen-0 values of the
    clock parameters = ClockModel.starts() (where MrBayes does not draw them at random), and the lines
    prset and calibrate echo = MrBayes'."""
    header, row, screen = _mrbayes(mb_double, tmp_path / "mb", CASES[case])
    it = _ours(tmp_path, CASES[case])
    s = it.settings
    models = clock_models(s)
    assert clock_pfile_header(s, free_parameters(s), models) == header
    starts = models[0].starts()
    for label, value in zip([h for h in header if h], row):
        key = label.split("{")[0]
        if key in starts and starts[key] is not None:
            assert float(value) == pytest.approx(starts[key], rel=1e-6), label
        if key.startswith("relative_fossilization_"):
            assert float(value) == pytest.approx(starts["relative_fossilization"], rel=1e-6), label
    theirs = screen.split("Returning execution to calling file")[-1].split("Setting number of generations")[0]
    assert _setting_lines(output(it)) == _setting_lines(theirs)


def test_clock_model_holds_the_settings(tmp_path):
    it = _ours(tmp_path, APES + " lset ploidy=zlinked; prset brlenspr=clock:coalescence popsizepr=gamma(2,4) "
               "topologypr=constraints(apes) nodeagepr=calibrated clockvarpr=tk02 tk02varpr=uniform(1,3) "
               "samplestrat=diversity 1: 0.3 sampleprob=0.25; calibrate apes=lognormal(0.2,0.05) " + TIPS[10:])
    (m,) = clock_models(it.settings)
    assert (m.tree_prior, m.clock_var, m.ploidy, m.ploidy_factor) == ("coalescence", "tk02", "Zlinked", 3.0)
    assert (m.sample_strat, m.shift_times, m.sample_prob) == ("diversity", (0.3,), 0.25)
    assert m.popsize.family == "Gamma" and m.starts()["popsize"] == 0.5 and m.starts()["tk02var"] is None
    (apes,) = m.node_calibrations
    assert apes.dist.kind == LOGNORMAL_MEAN_SD and apes.taxa == frozenset({2, 3, 4, 5, 6}) and not apes.tip
    assert [(c.name, c.dist.kind, tuple(c.taxa)) for c in m.tip_calibrations] == [
        ("Tarsius_syrichta", 0, (0,)), ("Lemur_catta", UNIFORM, (1,))]
    assert m.clock_rate_start == 1.0 and m.tree_age.ln_pdf(1.0) == pytest.approx(-1.0)
    it = _ours(tmp_path, "prset brlenspr=clock:uniform; " + TIPS)          # nodeagepr unconstrained: unused
    assert clock_models(it.settings)[0].tip_calibrations == () and len(it.settings.calibrations) == 2
    assert clock_models(_ours(tmp_path, "").settings) == [None]


def test_divisions_of_one_clock_tree_must_agree(tmp_path):
    """`prset applyto=(2) clockratepr=...` on one tree: MrBayes' handling is not measured, so it is refused
    where the model is built (and `mcmc` refuses the clock first); startvals are forgotten at every prset."""
    it = _ours(tmp_path, PART + " prset brlenspr=clock:uniform; prset applyto=(2) clockratepr=exponential(2);")
    with pytest.raises(NotImplementedYet, match="prset clockratepr differing between divisions 1 and 2"):
        clock_models(it.settings)
    it = _ours(tmp_path, "end;\nbegin trees; tree t = [&R] %s\nend;\nbegin mrbayes; startvals tau=t v=t; "
               "prset brlenspr=clock:uniform;" % T1)
    assert it.settings.startvals == {}


@pytest.mark.parametrize("command, message", [
    ("calibrate apes=uniform(0.3,0.2);", "Maximum age of uniform distribution must be larger than minimum age"),
    ("calibrate apes=offsetexponential(0.3,0.2);", "Mean age must be larger than offset age."),
    ("calibrate apes=truncatednormal(0.3,0.2,1);", "Mean age must be larger than offset (truncation) age."),
    ("calibrate apes=gamma(0,1);", "Mean parameter must be positive"),
    ("calibrate apes=lognormal(1,0);", "Standard deviation must be positive."),
    ("calibrate apes=offsetgamma(1,2,0);", "Standard deviation must be positive."),
    ("calibrate monkeys=fixed(1);", "No taxon or hard constraint named monkeys found. Note that only hard "
                                    "constraint can be calibrated."),
    ("constraint Pan = 3 4; calibrate Pan=fixed(1);", "Both a taxon and a constraint named Pan encountered -- "
                                                      "please rename one"),
])
def test_calibrate_errors_like_mrbayes(command, message, mb_double, tmp_path):
    """DoCalibrateParm's checks: our one-line error carries MrBayes' sentence, which mb-double prints."""
    with pytest.raises(CommandError) as e:
        _ours(tmp_path, APES + " " + command)
    assert e.value.message == message and ":4:" in e.value.one_line()
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "c.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s %s\nend;\n"
                                           % (APES, command))
    screen = subprocess.run([str(mb_double), "c.nex"], cwd=tmp_path / "mb", capture_output=True, text=True).stdout
    assert message in screen


@pytest.mark.parametrize("prior, accepted", [("popsizepr=lognormal(-1,0.5)", False), ("popsizepr=normal(-1,0.5)", False),
                                            ("clockratepr=normal(-1,0.5)", False), ("popsizepr=lognormal(0,0.5)", True),
                                            ("clockratepr=lognormal(-1,0.5)", True)])
def test_negative_means_refused_where_mrbayes_refuses_them(prior, accepted, mb_double, tmp_path):
    """MrBayes' popsizepr reader takes no '-' ("Expecting '<number>'") and its clockratepr normal needs a
    positive mean, while clockratepr=lognormal takes a negative log-scale mean: mbgpu accepts the same."""
    command = "prset brlenspr=clock:coalescence %s;" % prior
    if accepted:
        _ours(tmp_path, command)
    else:
        with pytest.raises(CommandError, match="the mean"):
            _ours(tmp_path, command)
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "c.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\nend;\n" % command)
    screen = subprocess.run([str(mb_double), "c.nex"], cwd=tmp_path / "mb", capture_output=True, text=True).stdout
    assert ("Error in command" not in screen) == accepted


@pytest.mark.parametrize("command, message", [
    ("prset samplestrat=random 2: 0.2 0.5;", "Time of fossil sampling rate shift must be in decreasing order"),
    ("prset samplestrat=random 1: 0;", "Time of fossil sampling rate shift must be > 0."),
])
def test_shift_time_errors_like_mrbayes(command, message, tmp_path):
    """(MrBayes' words, seen in mb-double: docs/plans/clocks-integration.md.)"""
    with pytest.raises(CommandError, match=message.replace(".", r"\.")):
        _ours(tmp_path, command)
    with pytest.raises(CommandError, match="unknown parameter of prset '1'"):     # MrBayes: parameter "1"
        _ours(tmp_path, "prset samplestrat=cluster 1: 0.3;")


@pytest.mark.parametrize("run, prset, what", [
    ("ss ngen=1", "brlenspr=clock:fossilization clockvarpr=igr",
     "ss with prset brlenspr=Clock:Fossilization and clockvarpr=igr"),
    ("mcmc ngen=1", "brlenspr=clock:fossilization clockvarpr=cpp",
     "mcmc with prset brlenspr=Clock:Fossilization and clockvarpr=cpp"),
    ("ss ngen=1", "brlenspr=clock:birthdeath clockvarpr=cpp", "ss with prset clockvarpr=cpp")])
def test_runs_the_clock_sampler_lacks_are_refused_at_the_command(run, prset, what, tmp_path):
    """Every clock setting is accepted and echoed; `ss` on the fossilized birth-death prior with a relaxed
    clock, the compound Poisson clock with it or under `ss` are refused at the command (clock_cmds.refuse_clock)."""
    with pytest.raises(NotImplementedYet) as e:
        _ours(tmp_path, "prset %s;\n%s nruns=1 nchains=1;" % (prset, run))
    line = e.value.one_line()
    assert ":5:1: error: %s is not supported yet" % what in line


def _gen0(text: str) -> list[str]:
    lines = text.splitlines()
    return [lines[1], lines[2]]


def test_clock_settings_leave_an_unconstrained_analysis_alone(mb_double, tmp_path, monkeypatch):
    """Without a clock tree MrBayes ignores the clock options, calibrations and lset ploidy (mb-double's
    `.p` header and Gen-0 row from one start tree are those of the run without them); so does mbgpu: the
    run goes ahead, with MrBayes' header and Gen-0 row."""
    monkeypatch.chdir(tmp_path)
    start = "end;\nbegin trees; tree t = %s\nend;\nbegin mrbayes; startvals tau=t v=t;" % T1
    clock = ("lset ploidy=haploid; prset clockvarpr=igr clockratepr=exponential(2) treeagepr=gamma(2,3) "
             "speciationpr=exponential(5) popsizepr=fixed(2) nodeagepr=calibrated; " + TIPS)
    rows = {}
    for name, commands in (("plain", start), ("clock", clock + start)):
        _mrbayes(mb_double, tmp_path / name, commands)
        rows["mb", name] = _gen0((tmp_path / name / "x.p").read_text())
        _ours(tmp_path, "%s\nmcmc ngen=1 nruns=1 nchains=1 samplefreq=1 printfreq=1 checkpoint=no filename=%s;"
              % (commands, name))
        rows["ours", name] = _gen0((tmp_path / (name + ".p")).read_text())
    assert rows["mb", "clock"] == rows["mb", "plain"] and rows["ours", "clock"] == rows["ours", "plain"]
    assert rows["ours", "plain"][0] == rows["mb", "plain"][0]
    ours, theirs = (rows[who, "plain"][1].split("\t") for who in ("ours", "mb"))
    assert [float(x) for x in ours] == pytest.approx([float(x) for x in theirs], rel=1e-6)


SHOWMODEL = {
    "fbd_igr_tips": CASES["tipdated_fbd_igr"] + " prset treeagepr=gamma(2,3) clockratepr=normal(1,0.5) "
                    "speciationpr=uniform(1,2) fossilizationpr=fixed(0.1);",
    "calibrated_nodes_and_tips": APES + " constraint root = 1-12; prset brlenspr=clock:uniform topologypr=constraints"
                                 "(apes) nodeagepr=calibrated; calibrate Lemur_catta=fixed(0.1) apes=uniform(0.15,0.25)"
                                 " Tarsius_syrichta=gamma(0.2,0.05);",
    "root_calibrated": APES + " constraint root = 1-12; prset brlenspr=clock:birthdeath topologypr=constraints(root) "
                       "nodeagepr=calibrated; calibrate root=uniform(0.5,1);",
    "calibration_not_enforced": APES + " prset brlenspr=clock:uniform nodeagepr=calibrated; calibrate "
                                "apes=uniform(0.15,0.25);",
    "coalescence_cpp": "prset brlenspr=clock:coalescence clockvarpr=cpp clockratepr=exponential(2) "
                       "popsizepr=normal(2,1) nodeagepr=calibrated; calibrate Lemur_catta=fixed(0.1);",
    "birthdeath_tk02": "prset brlenspr=clock:birthdeath clockvarpr=tk02 samplestrat=diversity sampleprob=0.5;",
    "uniform_fixed_age": "prset brlenspr=clock:uniform treeagepr=fixed(2) clockratepr=lognormal(-1,0.5);",
    "partitioned_fbd_igr": PART + " lset applyto=(all) rates=gamma; unlink shape=(all); prset "
                           "brlenspr=clock:fossilization clockvarpr=igr clockratepr=exponential(2);",
    "partitioned_coal_cpp": PART + " prset brlenspr=clock:coalescence clockvarpr=cpp;",
    "partitioned_tk02_tips": PART + " prset brlenspr=clock:uniform clockvarpr=tk02 nodeagepr=calibrated; " + TIPS,
}


def _summary(text: str, spacer: int) -> list[str]:
    """showmodel's lines from 'Model settings:' to the last parameter, blank lines and trailing spaces out."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == "Model settings:")
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == "Exiting mrbayes block"), len(lines))
    return [ln.rstrip()[spacer:] for ln in lines[start:end] if ln.strip()]


@pytest.mark.parametrize("case", list(SHOWMODEL))
def test_showmodel_like_mrbayes(case, mb_double, tmp_path):
    """`showmodel` of a clock model: the clock parameters' rows and paragraphs, V's calibration and tree-age
    lines (MrBayes' quirks: an unenforced calibration counted but not listed, no tree age under the
    coalescent or with the root calibrated), the relaxed clocks' Subparam. lines = mb-double's."""
    commands = SHOWMODEL[case] + "\nshowmodel;"
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "s.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\nend;\n" % commands)
    screen = subprocess.run([str(mb_double), "s.nex"], cwd=tmp_path / "mb", capture_output=True, text=True).stdout
    assert _summary(output(_ours(tmp_path, commands)), 0) == _summary(screen, 3)
