"""Stepping-stone sampling (`ss`): its schedule, files and screen lines against MrBayes 3.2.7a's, and its
estimate against MrBayes' and against the exact marginal likelihood of a 4-taxon data set computed here
by Gauss-Laguerre quadrature (numpy only: no mbgpu code enters the exact value)."""
import itertools
import math
import re
import statistics
import subprocess

import numpy as np
import pytest
from numpy.polynomial.laguerre import laggauss

from mbgpu.checkpoint.errors import CheckpointMissing
from mbgpu.errors import CommandError
from mbgpu.sampler import stepping_stone
from tests.helpers import DNA4, interp_for, output

SEQS = {"A": "ACGTACGTAAGT", "B": "ACGTACGTAAGA", "C": "ACCTACGAAGGA", "D": "ACCTTCGAAGCA"}
DATA = ("#NEXUS\nbegin data;\n  dimensions ntax=4 nchar=12;\n  format datatype=dna;\n  matrix\n"
        + "".join("  %s %s\n" % kv for kv in SEQS.items()) + "  ;\nend;\n")
MODEL = "lset nst=1 rates=equal;\n prset statefreqpr=fixed(equal) brlenspr=unconstrained:exponential(10);\n"


def exact_log_marginal(seqs: list[str], lam: float, n: int = 12) -> float:
    """log of (1/3) sum over the 3 unrooted topologies of the integral of the JC69 likelihood over 5
    branch lengths with iid Exponential(lam) priors: product Gauss-Laguerre with n points per branch
    (the integrand is a sum of exponentials in each length; n=12 agrees with n=20 to 1e-9)."""
    u, w = laggauss(n)
    v = np.meshgrid(*([u / lam] * 5), indexing="ij")
    weight = np.prod(np.meshgrid(*([w] * 5), indexing="ij"), axis=0)
    code = {"A": 0, "C": 1, "G": 2, "T": 3}
    cols = [[code[s[i]] for s in seqs] for i in range(len(seqs[0]))]
    probs = [(0.25 + 0.75 * np.exp(-4 * t / 3), 0.25 - 0.25 * np.exp(-4 * t / 3)) for t in v]   # a b c d e
    total = 0.0
    for order in ((0, 1, 2, 3), (0, 2, 1, 3), (0, 3, 1, 2)):          # (AB|CD), (AC|BD), (AD|BC)
        lik = np.ones_like(v[0])
        for col in cols:
            tips = [col[i] for i in order]
            site = 0.0
            for x, y in itertools.product(range(4), repeat=2):
                p = [probs[k][0] if s == t else probs[k][1] for k, (s, t) in
                     enumerate(((x, tips[0]), (x, tips[1]), (y, tips[2]), (y, tips[3]), (x, y)))]
                site = site + 0.25 * p[0] * p[1] * p[2] * p[3] * p[4]
            lik = lik * site
        total += float(np.sum(weight * lik)) / 3.0
    return math.log(total)


EXACT = exact_log_marginal(list(SEQS.values()), 10.0)


def _run_mb(mb_double, folder, body: str) -> str:
    folder.mkdir(exist_ok=True)
    (folder / "d.nex").write_text(DATA + "begin mrbayes;\n set autoclose=yes nowarn=yes;\n" + body + "end;\n")
    done = subprocess.run([str(mb_double), "d.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _run_mbgpu(folder, body: str, monkeypatch) -> str:
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    return output(interp_for(DATA + "begin mrbayes;\n" + body + "end;\n", folder, "d.nex"))


def _run_estimates(screen: str) -> list[float]:
    block = screen.split("Run   Marginal likelihood (ln)")[1].split("More statistics")[0].split("Mean:")[0]
    return [float(m.group(1)) for m in re.finditer(r"^\s+\d+\s+(-?\d+\.\d+)\s*$", block, re.M)]


def _ss_rows(path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text().splitlines() if line and line[0] != "["]


def test_powers_are_mrbayes_beta_quantiles():
    """MrBayes' .ss Power column for nsteps=5 alpha=0.4 (mb-double 3.2.7a, posterior to prior)."""
    p = stepping_stone.plan({"Ngen": 10000, "Samplefreq": 10, "Relburnin": "Yes", "Burninfrac": 0.25, "Burnin": 0},
                            {"Nsteps": 5, "Burninss": -1, "Alpha": 0.4, "Fromprior": "No"})
    assert ["%.4f" % p.power(k) for k in range(1, 6)] == ["0.5724", "0.2789", "0.1012", "0.0179", "0.0000"]
    assert (p.burnin_samples, p.step_gens, p.step_burnin_gens, p.ngen) == (166, 1660, 410, 9960)
    assert sum(p.length(k) for k in range(1, 6)) == pytest.approx(1.0)
    q = stepping_stone.plan({"Ngen": 10000, "Samplefreq": 10, "Relburnin": "Yes", "Burninfrac": 0.25, "Burnin": 0},
                            {"Nsteps": 5, "Burninss": -1, "Alpha": 0.4, "Fromprior": "Yes"})
    assert [q.power(k) for k in range(1, 6)] == [p.power(6 - k) for k in range(1, 6)]


@pytest.mark.parametrize("settings", [
    "ss ngen=2000 samplefreq=10 printfreq=500 nruns=2 nchains=2 nsteps=4 alpha=0.3 burninss=5 fromprior=yes "
    "diagnfreq=1000",
    "ss ngen=3005 samplefreq=20 printfreq=1000 nruns=1 nchains=1 nsteps=3 relburnin=no burnin=2 diagnfreq=1000",
])
def test_ss_file_and_screen_lines_match_mrbayes(mb_double, tmp_path, monkeypatch, settings):
    """The .ss file's legend and Step/Power columns byte for byte, and the schedule and step lines of the
    screen as MrBayes prints them (its estimates are random; they are compared below)."""
    body = " set seed=3 swapseed=4;\n " + MODEL + " " + settings + ";\n"
    mb_out = _run_mb(mb_double, tmp_path / "mb", body)
    ours = _run_mbgpu(tmp_path / "ours", body, monkeypatch)
    mb_ss, our_ss = (tmp_path / "mb" / "d.nex.ss"), (tmp_path / "ours" / "d.nex.ss")
    head = lambda p: [x for x in p.read_text().splitlines() if x.startswith("[") and not x.startswith("[ID")]  # noqa
    assert head(our_ss) == head(mb_ss)
    assert [r[:2] for r in _ss_rows(our_ss)] == [r[:2] for r in _ss_rows(mb_ss)]
    assert [len(r) for r in _ss_rows(our_ss)] == [len(r) for r in _ss_rows(mb_ss)]
    if "nruns=1" in settings:
        assert [r[-1] for r in _ss_rows(our_ss)] == [r[-1] for r in _ss_rows(mb_ss)]   # -2.0: no diagnostics
    gens = lambda p: [x.split("\t")[0] for x in p.read_text().splitlines() if x[:1].isdigit()]  # noqa
    assert gens(tmp_path / "ours" / "d.nex.mcmc") == gens(tmp_path / "mb" / "d.nex.mcmc")   # diagnostics' generations
    intro = lambda s: s.split("Starting stepping-stone")[1].split("Chain results")[0].split("\n")[:-1]  # noqa
    assert intro(ours) == intro(mb_out)
    steps = lambda s: re.findall(r"Sampling step \d+ out of \d+ steps", s)  # noqa
    assert steps(ours) == steps(mb_out)
    tail = lambda s: s.split("Marginal likelihood (in natural log units) estimated")[1].split("Run   Marg")[0]  # noqa
    assert tail(ours) == tail(mb_out)
    assert len(_run_estimates(ours)) == len(_run_estimates(mb_out))


@pytest.mark.slow
def test_ss_estimate_agrees_with_mrbayes_and_the_exact_value(mb_double, tmp_path, monkeypatch):
    """4 runs of mbgpu and 8 of MrBayes (mb-double) on the same 4-taxon JC69 data, 10 steps each: their
    means agree within Monte Carlo error (the runs' spread), and both agree with the exact value."""
    settings = "ss ngen=66000 samplefreq=10 printfreq=66000 nchains=2 nsteps=10 diagnfreq=66000"
    mb_out = _run_mb(mb_double, tmp_path / "mb", " set seed=11 swapseed=12;\n " + MODEL + " " + settings
                     + " nruns=8;\n")
    ours = _run_mbgpu(tmp_path / "ours", " set seed=11 swapseed=12;\n " + MODEL + " " + settings + " nruns=4;\n",
                      monkeypatch)
    theirs, mine = _run_estimates(mb_out), _run_estimates(ours)
    assert len(theirs) == 8 and len(mine) == 4
    se = lambda xs: max(statistics.stdev(xs) / math.sqrt(len(xs)), 0.01)  # noqa
    m1, m2 = statistics.mean(mine), statistics.mean(theirs)
    print("mbgpu %.4f +- %.4f   MrBayes %.4f +- %.4f   exact %.4f" % (m1, se(mine), m2, se(theirs), EXACT))
    assert abs(m1 - m2) < 4 * math.hypot(se(mine), se(theirs))
    assert abs(m1 - EXACT) < 4 * se(mine) + 0.03
    assert abs(m2 - EXACT) < 4 * se(theirs) + 0.03


def test_interpreted_step_raises_the_likelihood_to_the_power_too(interpreted, tmp_path, monkeypatch):
    """The interpreted chain step and swaps (models the compiled core does not take) use the step's power
    as well: fromprior=yes, two runs of two chains, against the exact value."""
    ours = _run_mbgpu(tmp_path, " set seed=5 swapseed=6;\n " + MODEL + " ss ngen=12000 samplefreq=10 "
                      "printfreq=12000 nruns=2 nchains=2 nsteps=6 fromprior=yes diagnfreq=12000;\n", monkeypatch)
    est = _run_estimates(ours)
    assert len(est) == 2
    assert abs(statistics.mean(est) - EXACT) < 0.35, (est, EXACT)


@pytest.mark.parametrize("command, error, where", [
    ("ss alpha=0;", CommandError, "alpha=0: it must be greater than 0"),
    ("ss nsteps=0;", CommandError, "nsteps=0"),
    ("ss ngen=100 samplefreq=10 burninss=10;", CommandError, "Burnin 10 samples is too large"),
    ("ss ngen=100 samplefreq=10 nsteps=20;", CommandError, "less then one sample in each step"),
    ("ss append=yes;", CheckpointMissing, "no checkpoint 'in.nex.ckp.h5' to continue from"),
])
def test_bad_values_are_refused_where_they_stand(tmp_path, command, error, where):
    with pytest.raises(error) as e:
        interp_for(DNA4 + "begin mrbayes;\n  " + command + "\nend;\n", tmp_path)
    line = e.value.one_line()
    assert line.startswith(str(tmp_path / "in.nex") + ":13:"), line
    assert where in line, line


def test_ssp_sets_without_running_and_ss_shares_mcmc_settings(tmp_path):
    it = interp_for(DNA4 + "begin mrbayes;\n  ssp nsteps=7 alpha=0.3 ngen=500 burninss=2 fromprior=yes;\nend;\n",
                    tmp_path)
    s = it.settings
    assert s.ss == {"Alpha": 0.3, "Burninss": 2, "Nsteps": 7, "Fromprior": "Yes"}
    assert s.mcmc["Ngen"] == 500 and "Nsteps" not in s.mcmc
    assert not (tmp_path / "in.nex.ss").exists()


def test_step_accumulator_survives_a_far_better_sample():
    """A step that starts thousands of log units below its later samples (a cold start): MrBayes' shift of
    the scaler overflows exp() in Python if taken literally; the mean stays the log-mean-exp."""
    from scipy.special import logsumexp

    from mbgpu.sampler.ss_tracker import StepAccumulator
    lnls = [-9000.0, -5000.0, -4990.0, -4995.5]
    acc = StepAccumulator(lnls[0], 0.8)
    for x in lnls:
        acc.add(x)
    want = logsumexp(0.8 * np.array(lnls)) - np.log(len(lnls))
    assert acc.log_mean() == pytest.approx(want, abs=1e-9)
