"""Every numeric value is checked where it is read: out-of-range, non-finite and overflowing values of every
numeric option of mcmc, set, lset, prset, sump and sumt, and out-of-range arguments of every prior family,
stop with one located CommandError and no output file; MrBayes' boundary values are accepted.

Driven through the interpreter in-process. The bounds are MrBayes 3.2.7a's (mbgpu.commands.limits); the
rows marked MB were checked against the mb binary, which refuses the same value.
"""
import math

import pytest

from mbgpu.commands.params import Float, Int, Numbers, parse_prior_text
from mbgpu.commands.table import build_table
from mbgpu.commands.values import Value
from mbgpu.errors import CommandError, NotImplementedYet
from tests.helpers import DNA4, interp_for
from tests.test_commands.test_prior_checks import BAD as PRIOR_BAD

COMMANDS = ("set", "lset", "prset", "mcmc", "sump", "sumt", "ssp", "sumss")
BIG = "99999999999999999999999"

# (command, option=value, part of the message); mcmcp stands for mcmc (same table, no run)
BAD = [
    ("mcmcp", "ngen=0", "ngen=0 is out of range: it must be in [1, 2147483647]"),                      # MB
    ("mcmcp", "ngen=2147483648", "must be in [1, 2147483647]"),                                      # MB
    ("mcmcp", "ngen=" + BIG, "ngen=99999999999999999999999 is out of range"),                         # MB
    ("mcmcp", "ngen=1e3", "ngen=1e3: it must be an integer"),
    ("mcmcp", "ngen=1_000", "ngen=1_000: it must be an integer"),
    ("mcmcp", "nruns=0", "nruns=0 is out of range: it must be in [1, 120]"),
    ("mcmcp", "nruns=121", "it must be in [1, 120]"),                                                # MB
    ("mcmcp", "nruns=100000", "nruns=100000 is out of range"),
    ("mcmcp", "nchains=0", "nchains=0 is out of range: it must be in [1, 256]"),                     # MB
    ("mcmcp", "nchains=257", "it must be in [1, 256]"),                                              # MB
    ("mcmcp", "nchains=2147483648", "nchains=2147483648 is out of range"),
    ("mcmcp", "temp=-1", "temp=-1 is out of range: it must be >= 0"),                                # MB
    ("mcmcp", "temp=inf", "temp=inf: it must be a finite number"),                                   # MB
    ("mcmcp", "temp=infinity", "temp=infinity: it must be a finite number"),
    ("mcmcp", "temp=1e999", "temp=1e999: it must be a finite number"),
    ("mcmcp", "temp=nan", "Temp: 'nan' is not a number"),                                            # MB
    ("mcmcp", "temp=x", "Temp: 'x' is not a number"),
    ("mcmcp", "reweight=(inf,0)", "reweight=(inf,0): every value must be a finite number"),
    ("mcmcp", "swapfreq=0", "swapfreq=0 is out of range: it must be in [1, 2147483647]"),           # MB
    ("mcmcp", "nswaps=0", "nswaps=0 is out of range"),                                               # MB
    ("mcmcp", "samplefreq=0", "samplefreq=0 is out of range"),                                       # MB
    ("mcmcp", "printfreq=0", "printfreq=0 is out of range"),                                         # MB
    ("mcmcp", "printmax=0", "printmax=0 is out of range"),                                           # MB
    ("mcmcp", "diagnfreq=0", "diagnfreq=0 is out of range"),                                         # MB
    ("mcmcp", "minpartfreq=0", "minpartfreq=0 is out of range: it must be in [0.01, 0.8]"),         # MB
    ("mcmcp", "minpartfreq=0.81", "it must be in [0.01, 0.8]"),                                      # MB
    ("mcmcp", "burnin=-1", "burnin=-1 is out of range: it must be in [0, 2147483647]"),             # MB
    ("mcmcp", "burninfrac=0", "burninfrac=0 is out of range: it must be in [0.01, 0.5]"),           # MB
    ("mcmcp", "burninfrac=0.51", "it must be in [0.01, 0.5]"),                                       # MB
    ("mcmcp", "stopval=0", "stopval=0 is out of range: it must be in [1e-06, 0.2]"),                # MB
    ("mcmcp", "stopval=0.21", "it must be in [1e-06, 0.2]"),                                         # MB
    ("mcmcp", "checkfreq=0", "checkfreq=0 is out of range: it must be in [1, 2147483647]"),
    ("mcmcp", "nperts=-1", "nperts=-1 is out of range"),                                             # MB
    ("mcmcp", "tunefreq=9", "tunefreq=9 is out of range: it must be in [10, 2147483647]"),          # MB
    ("set", "seed=0", "seed=0 is out of range: it must be in [1, 2147483646]"),                     # MB
    ("startvals", "ratemultiplier=(0)", "every start rate multiplier must be a positive number"),
    ("startvals", "ratemultiplier=(-2)", "ratemultiplier=(-2): every start rate multiplier must be"),
    ("set", "seed=2147483647", "it must be in [1, 2147483646]"),                                     # MB
    ("set", "swapseed=0", "swapseed=0 is out of range"),                                             # MB
    ("set", "seed=" + BIG, "seed=99999999999999999999999 is out of range"),
    ("set", "precision=2", "precision=2 is out of range: it must be in [3, 15]"),                   # MB
    ("set", "precision=16", "it must be in [3, 15]"),                                                # MB
    ("set", "beagleresource=-1", "beagleresource=-1 is out of range"),                               # MB
    ("set", "beaglethreadcount=-1", "beaglethreadcount=-1 is out of range"),
    ("set", "sitesplit=0", "sitesplit=0 is out of range"),
    ("lset", "ngammacat=1", "ngammacat=1 is out of range: it must be in [2, 20]"),                  # MB
    ("lset", "ngammacat=21", "it must be in [2, 20]"),                                               # MB
    ("lset", "nlnormcat=21", "nlnormcat=21 is out of range"),                                        # MB
    ("lset", "nmixtcat=1", "nmixtcat=1 is out of range"),                                            # MB
    ("lset", "nbetacat=0", "nbetacat=0 is out of range"),                                            # MB
    ("prset", "sampleprob=1.5", "sampleprob=1.5 is out of range: it must be in [0, 1]"),            # MB
    ("prset", "sampleprob=nan", "Sampleprob: 'nan' is not a number"),
    ("sump", "burnin=-1", "burnin=-1 is out of range"),                                              # MB
    ("sump", "burninfrac=0.6", "burninfrac=0.6 is out of range: it must be in [0.01, 0.5]"),        # MB
    ("sump", "nruns=0", "nruns=0 is out of range"),                                                  # MB
    ("sump", "minprob=2", "minprob=2 is out of range: it must be in [0, 0.5]"),                     # MB
    ("sumt", "burnin=" + BIG, "burnin=99999999999999999999999 is out of range"),
    ("sumt", "burninfrac=0.6", "burninfrac=0.6 is out of range"),                                    # MB
    ("sumt", "nruns=0", "nruns=0 is out of range"),
    ("sumt", "ntrees=0", "ntrees=0 is out of range"),                                                # MB
    ("sumt", "minpartfreq=1.1", "minpartfreq=1.1 is out of range: it must be in [0, 1]"),
    ("sumt", "minpartfreq=-inf", "minpartfreq=-inf: it must be a finite number"),
    ("sumt", "minbrparamfreq=1.1", "minbrparamfreq=1.1 is out of range"),
    ("ssp", "alpha=0", "alpha=0: it must be greater than 0"),
    ("ssp", "alpha=-0.5", "alpha=-0.5: it must be greater than 0"),
    ("ssp", "nsteps=0", "nsteps=0 is out of range: it must be in [1, 2147483647]"),
    ("ssp", "burninss=" + BIG, "burninss=99999999999999999999999 is out of range"),
    ("sumss", "burnin=-1", "burnin=-1 is out of range"),
    ("sumss", "burninfrac=0.6", "burninfrac=0.6 is out of range: it must be in [0.01, 0.5]"),
    ("sumss", "discardfrac=1.5", "discardfrac=1.5 is out of range: it must be in [0, 1]"),
    ("sumss", "nruns=0", "nruns=0 is out of range"),
    ("sumss", "steptoplot=-1", "steptoplot=-1 is out of range"),
    ("sumss", "smoothing=-1", "smoothing=-1 is out of range"),
]

# values at MrBayes' bounds that must be accepted (mcmcp stores them without running)
GOOD = ["mcmcp ngen=2147483647 nruns=120 nchains=256 temp=0 swapfreq=1 burninfrac=0.01 minpartfreq=0.8 "
        "stopval=0.2 tunefreq=10 checkfreq=1 burnin=0 samplefreq=+5;",
        "mcmcp burninfrac=0.5 minpartfreq=0.01 stopval=0.000001 temp=1e308 ngen=1;",
        "set seed=1 swapseed=2147483646 precision=3; set precision=15 seed=2147483646;",
        "lset rates=gamma ngammacat=2; lset ngammacat=20;",
        "prset pinvarpr=fixed(0) shapepr=uniform(0,1e300) symdirihyperpr=fixed(infinity);"]


def _run(tmp_path, line: str):
    return interp_for(DNA4 + "begin mrbayes;\n" + line + "\nend;\n", tmp_path)


def _where(tmp_path) -> str:
    return str(tmp_path / "in.nex") + ":13:"


def _numeric(command: str):
    return [p for p in build_table()[command].params if isinstance(p, (Int, Float, Numbers))]


@pytest.mark.parametrize("command, assignment, message", BAD, ids=["%s %s" % r[:2] for r in BAD])
def test_a_bad_value_is_refused_where_it_is_read(tmp_path, command, assignment, message):
    """One located CommandError (exit status 2 from the CLI), at the value's column; no file written."""
    with pytest.raises(CommandError) as e:
        _run(tmp_path, "%s %s;" % (command, assignment))
    assert not isinstance(e.value, NotImplementedYet)
    col = 1 + len(command) + 1 + len(assignment.split("=")[0]) + 1
    line = e.value.one_line()
    assert line.startswith("%s%d: error: " % (_where(tmp_path), col)), line
    assert message in line and "\n" not in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.nex"]


def test_every_numeric_option_has_a_bad_row():
    """Guard: a numeric option added to the table without a row above fails here."""
    covered = {("mcmc" if c == "mcmcp" else c, a.split("=")[0]) for c, a, _ in BAD}
    covered |= {("ssp", o) for c, o in covered if c == "mcmc"}        # ss/ssp share mcmc's parameters
    options = {(c, p.name.lower()) for c in COMMANDS for p in _numeric(c)}
    assert options - covered == set()


@pytest.mark.parametrize("command", COMMANDS)
def test_every_integer_overflows_and_every_real_is_finite(tmp_path, command):
    """Generated from the table: a 23-digit integer and inf/-inf/nan reals never pass any option."""
    spec = build_table()[command]
    word = "mcmcp" if command == "mcmc" else command
    for p in _numeric(command):
        values = [BIG, "-" + BIG] if isinstance(p, Int) else ["inf", "-inf", "nan", "1e999"]
        if isinstance(p, Numbers):
            values = ["(%s)" % v for v in values]
        for v in values:
            with pytest.raises(CommandError) as e:
                _run(tmp_path, "%s %s=%s;" % (word, p.name.lower(), v))
            assert not isinstance(e.value, NotImplementedYet), (spec.name, p.name, v)
            assert e.value.one_line().startswith(_where(tmp_path)), e.value.one_line()
    assert sorted(x.name for x in tmp_path.iterdir()) == ["in.nex"]


def test_every_integer_has_an_upper_bound_that_fits_a_c_int():
    for c in COMMANDS:
        for p in _numeric(c):
            if isinstance(p, Int):
                assert p.hi is not None and p.hi <= 2**31 - 1, (c, p.name)


@pytest.mark.parametrize("line", GOOD)
def test_boundary_values_are_accepted(tmp_path, line):
    _run(tmp_path, line)


@pytest.mark.parametrize("command, option, text", [("sumt", "Minpartfreq", "0"), ("sumt", "Minpartfreq", "1"),
                                                   ("sumt", "Burninfrac", "0.5"), ("sump", "Minprob", "0.5"),
                                                   ("sump", "Nruns", "2147483647"), ("sumt", "Ntrees", "1")])
def test_summary_boundaries_convert(command, option, text):
    """sump and sumt summarise as soon as they are read, so their bounds are checked on the parameter."""
    param = {p.name: p for p in build_table()[command].params}[option]
    assert param.convert(Value(text, None, None, None)) == float(text)


def test_accepted_values_are_stored(tmp_path):
    s = _run(tmp_path, GOOD[0]).settings
    assert (s.mcmc["Ngen"], s.mcmc["Nruns"], s.mcmc["Nchains"], s.mcmc["Temp"]) == (2147483647, 120, 256, 0.0)
    assert s.mcmc["Samplefreq"] == 5


PRIOR_EXTRA = [  # non-finite and overflowing arguments of the families the table's prior rows cover
    ("Shapepr", "Exponential", "inf", "the rate must be > 0, not infinity"),
    ("Shapepr", "Exponential", "nan", "Shapepr: 'nan' is not a number"),
    ("Shapepr", "Uniform", "0,inf", "the upper bound must be > 0, not infinity"),
    ("Shapepr", "Uniform", "0,1e999", "the upper bound must be > 0, not infinity"),
    ("Tratiopr", "Beta", "inf,1", "the first shape must be > 0, not infinity"),
    ("Tratiopr", "Fixed", "inf", "must be > 0, not infinity"),
    ("Pinvarpr", "Fixed", "-inf", "the proportion must be in [0, 1), not -inf"),
    ("Statefreqpr", "Dirichlet", "1,inf,1,1", "every Dirichlet parameter must be > 0, not infinity"),
    ("Statefreqpr", "Fixed", "inf,0,0,0", "every frequency must be >= 0, not infinity"),
    ("Revmatpr", "Dirichlet", "1,1,1,1,1,nan", "Revmatpr: 'nan' is not a number"),
    ("Brlenspr", "Unconstrained:Exponential", "inf", "the rate must be > 0, not infinity"),
    ("Brlenspr", "Unconstrained:GammaDir", "1,inf,1,1", "the bT must be > 0, not infinity"),
]


@pytest.mark.parametrize("param, key, args, message", PRIOR_BAD + PRIOR_EXTRA,
                         ids=["%s=%s(%s)" % r[:3] for r in PRIOR_BAD + PRIOR_EXTRA])
def test_every_prior_family_refuses_out_of_range_arguments(tmp_path, param, key, args, message):
    """Each row of tests/test_commands/test_prior_checks.py::BAD (every family of every *pr option), plus
    non-finite arguments, through the interpreter: one located error at the value, nothing written."""
    text = "%s=%s%s" % (param.lower(), key.lower(), "" if args is None else "(%s)" % args)
    with pytest.raises(CommandError) as e:
        _run(tmp_path, "prset %s;" % text)
    line = e.value.one_line()
    assert line.startswith("%s%d: error: " % (_where(tmp_path), 1 + len("prset %s=" % param.lower()))), line
    spec = {p.name: p for p in build_table()["prset"].params}[param]
    if isinstance(e.value, NotImplementedYet):   # a family mbgpu does not run yet is refused first
        assert spec.unsupported(parse_prior_text(key + ("" if args is None else "(%s)" % args))) is not None
    elif "per division" not in message:
        assert message in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.nex"]


def test_parse_number_keeps_infinity_for_priors_only():
    assert math.isinf(parse_prior_text("Fixed(Infinity)").args[0])
