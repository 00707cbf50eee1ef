"""Bad prior values stop at `prset` with one clear line (status 2), as MrBayes refuses them.

Table-driven: every prior family of every `prset` parameter (brlenspr's ':' parts included) with at
least one bad value, through the CLI entry point; a few through `python -m mbgpu` in a subprocess,
a few confirmed against the real MrBayes. State-frequency counts depend on the division's datatype
and stop at `mcmc` (model_settings).
"""
import os
import subprocess
import sys

import pytest

from mbgpu.commands.params import Prior, parse_prior_text
from mbgpu.commands.prior_checks import check_prior, rule_for
from mbgpu.commands.table import build_table
from tests.conftest import ROOT
from tests.helpers import DNA4

PROTEIN4 = """#NEXUS
begin data;
  dimensions ntax=4 nchar=6;
  format datatype=protein gap=- missing=?;
  matrix
  A  ARNDCQ
  B  ARNDCE
  C  ARNECE
  D  AKN?CE
  ;
end;
"""

# (parameter, family or 'Head:Sub', arguments as typed or None for none, part of the message)
BAD = [
    ("Tratiopr", "Beta", "0,0", "the first shape must be > 0, not 0"),
    ("Tratiopr", "Beta", "-1,1", "the first shape must be > 0, not -1"),
    ("Tratiopr", "Beta", "1", "Beta takes 2 numbers (first shape, second shape), got 1"),
    ("Tratiopr", "Fixed", "0", "must be > 0, not 0"),
    ("Revmatpr", "Dirichlet", "1,1,1,1,1", "Dirichlet takes 1 or 6 values, got 5"),
    ("Revmatpr", "Dirichlet", "1,1,1,1,1,0", "every Dirichlet parameter must be > 0, not 0"),
    ("Revmatpr", "Fixed", "1,1,1,1,1", "Fixed takes 6 numbers"),
    ("Revmatpr", "Fixed", "1,1,1,1,1,-1", "the rate must be > 0, not -1"),
    ("Aamodelpr", "Fixed", "wag,jones", "Fixed takes one name, got 2 arguments"),
    ("Aamodelpr", "Mixed", "1", "Mixed takes no arguments"),
    ("Aarevmatpr", "Dirichlet", "1,1", "Dirichlet takes 1 or 190 values, got 2"),
    ("Aarevmatpr", "Fixed", "1,1", "Fixed takes 190 numbers"),
    ("Omegapr", "Dirichlet", "1", "Dirichlet takes 2 values, got 1"),
    ("Omegapr", "Fixed", "-1", "the omega must be >= 0, not -1"),
    ("Ny98omega1pr", "Beta", "1,0", "the second shape must be > 0, not 0"),
    ("Ny98omega1pr", "Fixed", "2", "the omega1 must be in [0, 1], not 2"),
    ("Ny98omega3pr", "Uniform", "2,1", "the lower bound (2) must be less than the upper bound (1)"),
    ("Ny98omega3pr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Ny98omega3pr", "Fixed", "-1", "the omega3 must be >= 0, not -1"),
    ("M3omegapr", "Exponential", "1", "Exponential takes no arguments"),
    ("M3omegapr", "Fixed", "0.1,1", "Fixed takes 3 numbers"),
    ("Codoncatfreqs", "Dirichlet", "1,1", "Dirichlet takes 3 values, got 2"),
    ("Codoncatfreqs", "Fixed", "0.5,0.5,0.5", "the frequencies must sum to 1, not 1.5"),
    ("Statefreqpr", "Dirichlet", "1,0,1,1", "every Dirichlet parameter must be > 0, not 0"),
    ("Statefreqpr", "Dirichlet", "-1", "every Dirichlet parameter must be > 0, not -1"),
    ("Statefreqpr", "Fixed", "0.5,0.5,0.5,0.5", "the frequencies must sum to 1, not 2"),
    ("Statefreqpr", "Fixed", "-0.25,0.5,0.5,0.25", "every frequency must be >= 0, not -0.25"),
    ("Statefreqpr", "Fixed", "even", "expected fixed(equal), fixed(empirical) or fixed(frequencies), not 'even'"),
    ("Shapepr", "Uniform", "5,1", "the lower bound (5) must be less than the upper bound (1)"),
    ("Shapepr", "Uniform", "-1,5", "the lower bound must be >= 0, not -1"),
    ("Shapepr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Shapepr", "Exponential", "-1", "the rate must be > 0, not -1"),
    ("Shapepr", "Exponential", "1,2", "Exponential takes 1 number (rate), got 2"),
    ("Shapepr", "Fixed", "0", "the shape must be > 0, not 0"),
    ("Shapepr", "Fixed", "infinity", "the shape must be > 0, not infinity"),
    ("Ratecorrpr", "Uniform", "-2,1", "the lower bound must be in [-1, 1), not -2"),
    ("Ratecorrpr", "Fixed", "2", "the correlation must be in (-1, 1), not 2"),
    ("Pinvarpr", "Uniform", "0,2", "the upper bound must be in (0, 1], not 2"),
    ("Pinvarpr", "Uniform", "1,0", "the lower bound must be in [0, 1), not 1"),
    ("Pinvarpr", "Fixed", "1", "the proportion must be in [0, 1), not 1"),
    ("Covswitchpr", "Uniform", "1,0", "the upper bound must be > 0, not 0"),
    ("Covswitchpr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Covswitchpr", "Fixed", "1", "Fixed takes 2 numbers (rate, rate), got 1"),
    ("Symdirihyperpr", "Uniform", "2,1", "the lower bound (2) must be less than the upper bound (1)"),
    ("Symdirihyperpr", "Exponential", "-1", "the rate must be > 0, not -1"),
    ("Symdirihyperpr", "Fixed", "0", "the alpha must be > 0, not 0"),
    ("Topologypr", "Uniform", "1,2", "Uniform takes no arguments"),
    ("Topologypr", "Constraints", None, "name at least one constraint"),
    ("Topologypr", "Fixed", "t1,t2", "Fixed takes one name, got 2 arguments"),
    ("Topologypr", "Speciestree", "1", "Speciestree takes no arguments"),
    ("Brlenspr", "Unconstrained:Exponential", "0", "the rate must be > 0, not 0"),
    ("Brlenspr", "Unconstrained:Uniform", "1,2", "the lower bound must be = 0, not 1"),
    ("Brlenspr", "Unconstrained:Uniform", "0,0", "the upper bound must be > 0, not 0"),
    ("Brlenspr", "Unconstrained:GammaDir", "0,0.1,1,1", "the aT must be > 0, not 0"),
    ("Brlenspr", "Unconstrained:GammaDir", "1,-1,1,1", "the bT must be > 0, not -1"),
    ("Brlenspr", "Unconstrained:GammaDir", "1,0.1,1,0", "the c must be > 0, not 0"),
    ("Brlenspr", "Unconstrained:GammaDir", "1,0.1,1", "GammaDir takes 4 numbers (aT, bT, a, c), got 3"),
    ("Brlenspr", "Unconstrained:invGamDir", "2,1,1,1", "the aT must be > 2, not 2"),
    ("Brlenspr", "Unconstrained:twoExp", "0,1", "the terminal rate must be > 0, not 0"),
    ("Brlenspr", "Clock:Uniform", "1,2", "Uniform takes no arguments"),
    ("Brlenspr", "Clock:Birthdeath", "1", "Birthdeath takes no arguments"),
    ("Brlenspr", "Clock:Coalescence", "1", "Coalescence takes no arguments"),
    ("Brlenspr", "Clock:Fossilization", "1", "Fossilization takes no arguments"),
    ("Brlenspr", "Clock:Speciestree", "1", "Speciestree takes no arguments"),
    ("Brlenspr", "Fixed", "1", "Fixed takes a name, not the number 1"),
    ("Treeagepr", "Gamma", "0,1", "the mean must be > 0, not 0"),
    ("Treeagepr", "Uniform", "5,1", "the lower bound (5) must be less than the upper bound (1)"),
    ("Treeagepr", "Fixed", "0", "the age must be > 0, not 0"),
    ("Treeagepr", "Truncatednormal", "1,2,0", "the standard deviation must be > 0, not 0"),
    ("Treeagepr", "Lognormal", "1,0", "the standard deviation must be > 0, not 0"),
    ("Treeagepr", "Offsetlognormal", "-1,1,1", "the offset must be >= 0, not -1"),
    ("Treeagepr", "Offsetgamma", "1,0,1", "the mean must be > 0, not 0"),
    ("Treeagepr", "Offsetexponential", "10,5", "the mean (5) must be larger than the offset (10)"),
    ("Speciationpr", "Uniform", "1,1", "the lower bound (1) must be less than the upper bound (1)"),
    ("Speciationpr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Speciationpr", "Fixed", "0", "the net speciation rate must be > 0, not 0"),
    ("Extinctionpr", "Beta", "0,1", "the first shape must be > 0, not 0"),
    ("Extinctionpr", "Fixed", "1", "the relative extinction rate must be in [0, 1), not 1"),
    ("Fossilizationpr", "Beta", "1,0", "the second shape must be > 0, not 0"),
    ("Fossilizationpr", "Fixed", "2", "the relative fossilization rate must be in [0, 1], not 2"),
    ("Popsizepr", "Lognormal", "1,0", "the standard deviation must be > 0, not 0"),
    ("Popsizepr", "Gamma", "1,0", "the rate must be > 0, not 0"),
    ("Popsizepr", "Uniform", "2,1", "the lower bound (2) must be less than the upper bound (1)"),
    ("Popsizepr", "Normal", "1,0", "the standard deviation must be > 0, not 0"),
    ("Popsizepr", "Fixed", "0", "the population size must be > 0, not 0"),
    ("Clockratepr", "Fixed", "0", "the clock rate must be > 0, not 0"),
    ("Clockratepr", "Normal", "0.1,0", "the standard deviation must be > 0, not 0"),
    ("Clockratepr", "Lognormal", "-7,0", "the standard deviation must be > 0, not 0"),
    ("Clockratepr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Clockratepr", "Gamma", "0,1", "the shape must be > 0, not 0"),
    ("Cppratepr", "Fixed", "0", "the rate must be > 0, not 0"),
    ("Cppratepr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Cppmultdevpr", "Fixed", "0", "the standard deviation must be > 0, not 0"),
    ("TK02varpr", "Fixed", "0", "the variance must be > 0, not 0"),
    ("TK02varpr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("TK02varpr", "Uniform", "1,0", "the upper bound must be > 0, not 0"),
    ("Igrvarpr", "Fixed", "0", "the variance must be > 0, not 0"),
    ("Igrvarpr", "Exponential", "0", "the rate must be > 0, not 0"),
    ("Igrvarpr", "Uniform", "2,1", "the lower bound (2) must be less than the upper bound (1)"),
    ("Ratepr", "Fixed", "1", "Fixed takes no arguments"),
    ("Ratepr", "Variable", "1", "Variable takes no arguments"),
    ("Ratepr", "Dirichlet", "0", "every Dirichlet parameter must be > 0, not 0"),
    ("Ratepr", "Dirichlet", "1,1", "needs one value per division it applies to (1), got 2"),
    ("Generatepr", "Fixed", "1", "Fixed takes no arguments"),
    ("Generatepr", "Variable", "1", "Variable takes no arguments"),
    ("Generatepr", "Dirichlet", "0", "every Dirichlet parameter must be > 0, not 0"),
]


def prset_text(param: str, key: str, args) -> str:
    return "%s=%s%s" % (param.lower(), key.lower(), "" if args is None else "(%s)" % args)


def _ids(rows):
    return ["%s=%s(%s)" % (p.lower(), k.lower(), a) for p, k, a, *_ in rows]


def _keys(spec: Prior) -> set[str]:
    return {"%s:%s" % (h, s) if spec.subs.get(h) else h for h in spec.heads for s in (spec.subs.get(h) or ("",))}


def test_every_prior_family_of_prset_has_a_rule_and_a_bad_value():
    """Guard: a family added to the prset table without a check (or without a row above) fails here."""
    priors = [p for p in build_table()["prset"].params if isinstance(p, Prior)]
    combos = {(p.name, k.rstrip(":")) for p in priors for k in _keys(p)}
    covered = {(p, k) for p, k, _, _ in BAD}
    assert combos - covered == set()
    unchecked = {(p, k) for p, k in combos if rule_for(p, k) is None}
    assert unchecked == set()


def test_the_defaults_and_usual_values_pass():
    """No false alarms: every table default and the values MrBayes' example files use."""
    for p in build_table()["prset"].params:
        if isinstance(p, Prior):
            check_prior(p.name, p.default)
    good = [("Clockratepr", "Lognormal(-7,0.6)"), ("Treeagepr", "Offsetexponential(300,390)"),
            ("Brlenspr", "Unconstrained:invGamDir(3,2,1,1)"), ("Brlenspr", "Unconstrained:GammaDir(1,1,0.7,0.5)"),
            ("Brlenspr", "Unconstrained:Uniform(0,10)"), ("Brlenspr", "Clock:Birthdeath"),
            ("Statefreqpr", "Fixed(0.36,0.32,0.08,0.24)"), ("Statefreqpr", "Fixed(0.25,0.25,0.25,0.2505)"),
            ("Statefreqpr", "Fixed(empirical)"), ("Statefreqpr", "Fixed(eq)"), ("Statefreqpr", "Dirichlet(2)"),
            ("Ratecorrpr", "Uniform(-1,1)"), ("Pinvarpr", "Uniform(0,1)"), ("Pinvarpr", "Fixed(0)"),
            ("Symdirihyperpr", "Fixed(Infinity)"), ("Topologypr", "Constraints(root,hym)"),
            ("Extinctionpr", "Fixed(0)"), ("Fossilizationpr", "Fixed(1)"), ("Ratepr", "Dirichlet(1)"),
            ("Aamodelpr", "Fixed(Equalin)"), ("Revmatpr", "Fixed(0.04,0.47,0.035,0.035,0.39,0.03)")]
    for name, text in good:
        check_prior(name, parse_prior_text(text))


def _run_cli(tmp_path, monkeypatch, capsys, text: str) -> tuple[int, str]:
    from mbgpu.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.nex").write_text(text)
    status = main(["bad.nex"])
    return status, capsys.readouterr().err


def _mrbayes_block(prset: str) -> str:
    return "begin mrbayes;\n  set quitonerror=yes;\n  prset %s;\n  mcmc ngen=1 nruns=1 nchains=1;\nend;\n" % prset


@pytest.mark.parametrize("param, key, args, message", BAD, ids=_ids(BAD))
def test_bad_prior_value_is_one_line_at_prset(tmp_path, monkeypatch, capsys, param, key, args, message):
    """Status 2, one line `bad.nex:LINE:COL: error: param=Value: problem` pointing at the value, no output."""
    text = prset_text(param, key, args)
    status, err = _run_cli(tmp_path, monkeypatch, capsys, DNA4 + _mrbayes_block(text))
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    col = 1 + len("  prset %s=" % param.lower())
    assert sorted(os.listdir(tmp_path)) == ["bad.nex"]
    if _refused(param, key, args):   # a family mbgpu does not run yet: that is said first, at the same place
        assert err.startswith("bad.nex:14:%d: error: prset %s=" % (col, param.lower())), err
        assert err.rstrip().endswith("is not supported yet"), err
        return
    assert err.startswith("bad.nex:14:%d: error: %s=" % (col, param.lower())), err
    assert message in err, err


def _refused(param: str, key: str, args) -> bool:
    spec = {p.name: p for p in build_table()["prset"].params}[param]
    return spec.unsupported(parse_prior_text(key + ("" if args is None else "(%s)" % args))) is not None


DATATYPE_BAD = [
    (DNA4, "statefreqpr=dirichlet(1,1,1)", "statefreqpr=Dirichlet(1,1,1): DNA data needs 4 Dirichlet values "
                                           "(or one for all), got 3"),
    (DNA4, "statefreqpr=fixed(0.2,0.2,0.2,0.2,0.2)", "DNA data needs 4 frequencies, got 5"),
    (PROTEIN4, "statefreqpr=dirichlet(1,2,3,4)", "protein data needs 20 Dirichlet values (or one for all), got 4"),
    (PROTEIN4, "aamodelpr=fixed(equalin) statefreqpr=fixed(0.25,0.25,0.25,0.25)",
     "protein data needs 20 frequencies, got 4"),
]


@pytest.mark.parametrize("data, prset, message", DATATYPE_BAD, ids=[p for _, p, _ in DATATYPE_BAD])
def test_frequency_counts_are_checked_against_the_datatype(tmp_path, monkeypatch, capsys, data, prset, message):
    """4 values for DNA, 20 for protein: known once the division is; the line points at `mcmc`."""
    status, err = _run_cli(tmp_path, monkeypatch, capsys, data + _mrbayes_block(prset))
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("bad.nex:15:3: error: division 1: ") and message in err, err
    assert sorted(os.listdir(tmp_path)) == ["bad.nex"]


def test_equalin_runs_with_the_default_frequency_prior(tmp_path, monkeypatch, capsys):
    """It used to stop with a traceback: the 4-value default Dirichlet against 20 frequencies."""
    status, err = _run_cli(tmp_path, monkeypatch, capsys, PROTEIN4 + _mrbayes_block("aamodelpr=fixed(equalin)"))
    assert status == 0, err
    header = (tmp_path / "bad.nex.p").read_text().splitlines()[1].split("\t")
    assert header[4:] == ["pi(%s)" % a for a in ("Ala", "Arg", "Asn", "Asp", "Cys", "Gln", "Glu", "Gly", "His",
                                                   "Ile", "Leu", "Lys", "Met", "Phe", "Pro", "Ser", "Thr", "Trp",
                                                   "Tyr", "Val")]


SUBPROCESS = ["shapepr=exponential(-1)", "pinvarpr=uniform(0,2)", "brlenspr=unconstrained:gammadir(1,-1,1,1)"]


@pytest.mark.parametrize("prset", SUBPROCESS)
def test_the_mbgpu_command_prints_one_line(tmp_path, prset):
    """`python -m mbgpu FILE` as a user runs it."""
    (tmp_path / "bad.nex").write_text(DNA4 + _mrbayes_block(prset))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "mbgpu", "bad.nex"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("bad.nex:14:") and ": error: %s=" % prset.split("=")[0] in done.stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.nex"]


MRBAYES_REFUSES = ["shapepr=exponential(-1)", "shapepr=uniform(5,1)", "pinvarpr=uniform(0,2)",
                   "tratiopr=beta(0,0)", "statefreqpr=fixed(0.5,0.5,0.5,0.5)", "revmatpr=dirichlet(1,1,1,1,1)",
                   "brlenspr=unconstrained:gammadir(0,0.1,1,1)", "brlenspr=unconstrained:exponential(0)",
                   "statefreqpr=dirichlet(1,1,1)"]


@pytest.mark.parametrize("prset", MRBAYES_REFUSES)
def test_mrbayes_refuses_them_too(tmp_path, mb_double, prset):
    """The real MrBayes stops on the same file (its message differs); mbgpu's status is 2."""
    (tmp_path / "bad.nex").write_text(DNA4 + _mrbayes_block(prset))
    done = subprocess.run([str(mb_double), "bad.nex"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1
    assert "The error occurred when reading char." in done.stdout, done.stdout[-800:]
    assert not any(name.endswith(".p") for name in os.listdir(tmp_path))
