"""`ss` (stepping-stone marginal likelihood) of a clock tree: mbgpu's estimate agrees with MrBayes'
(mb-double) on the same 4-taxon data under a strict clock, and on primates under the fossilized
birth-death prior with two fossil tips, within the Monte Carlo error of their runs; the FBD run's .ss file
and .p header are MrBayes'. (MrBayes' ss raises only the likelihood ratio to the step's power, for every
move the FBD ones included: RunChain, `lnLikelihoodRatio *= powerSS`.)"""
from __future__ import annotations

import math
import shutil
import statistics
import subprocess

import pytest

from mbgpu.errors import ModelError
from mbgpu.sampler import stepping_stone
from tests.helpers import interp_for, output
from tests.test_clock.trees import DATA
from tests.test_sampler.test_stepping_stone import _run_estimates, _run_mb, _run_mbgpu, _ss_rows

MODEL = ("lset nst=1 rates=equal;\n prset statefreqpr=fixed(equal) brlenspr=clock:uniform treeagepr=gamma(0.2,0.1) "
         "clockratepr=fixed(1);\n")


# primates' first 100 characters (a posterior not far from the FBD prior, so the runs' estimates spread
# little), Tarsius and Lemur fossil tips of fixed ages: AddBranch / DelBranch make and unmake sampled ancestors
FBD = ("exclude 101-898;\n lset nst=1 rates=equal;\n prset statefreqpr=fixed(equal) brlenspr=clock:fossilization "
       "nodeagepr=calibrated;\n calibrate Tarsius_syrichta=uniform(0.05,0.3) Lemur_catta=uniform(0.02,0.2);\n")


def _se(xs: list[float]) -> float:
    """The standard error of the runs' mean (at least 0.01)."""
    return max(statistics.stdev(xs) / math.sqrt(len(xs)), 0.01)


@pytest.mark.slow
def test_clock_ss_estimate_agrees_with_mrbayes(mb_double, tmp_path, monkeypatch):
    settings = "ss ngen=20000 samplefreq=10 printfreq=20000 nchains=1 nsteps=10 diagnfreq=20000"
    theirs = _run_estimates(_run_mb(mb_double, tmp_path / "mb", " set seed=11 swapseed=12;\n " + MODEL + " "
                                    + settings + " nruns=8;\n"))
    mine = _run_estimates(_run_mbgpu(tmp_path / "ours", " set seed=11 swapseed=12;\n " + MODEL + " " + settings
                                     + " nruns=4;\n", monkeypatch))
    assert len(theirs) == 8 and len(mine) == 4
    m1, m2 = statistics.mean(mine), statistics.mean(theirs)
    print("mbgpu %.4f +- %.4f   MrBayes %.4f +- %.4f" % (m1, _se(mine), m2, _se(theirs)))
    assert abs(m1 - m2) < 4 * math.hypot(_se(mine), _se(theirs)), (mine, theirs)


def _run_primates(mb_double, folder, body: str, monkeypatch=None) -> str:
    """`body` after primates.nex in folder/cmd.nex, run by mb-double or (monkeypatch given) by mbgpu; the
    screen output."""
    folder.mkdir()
    shutil.copy(DATA, folder / "primates.nex")
    text = "#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes;\n execute primates.nex;\n%send;\n" % body
    if monkeypatch is None:
        (folder / "cmd.nex").write_text(text)
        done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:]
        return done.stdout
    monkeypatch.chdir(folder)
    return output(interp_for(text, folder, "cmd.nex"))


def test_fbd_ss_files_match_mrbayes(mb_double, tmp_path, monkeypatch):
    """ss on the FBD prior runs as MrBayes' does: the .ss legend, Step/Power columns and column count, the
    schedule and step lines of the screen, and the .p header (FBD columns) are mb-double's."""
    body = (" set seed=3 swapseed=4;\n " + FBD + " ss ngen=2000 samplefreq=10 printfreq=1000 nruns=2 nchains=1 "
            "nsteps=4 diagnfreq=1000 filename=x;\n")
    screens = {who: _run_primates(mb_double, tmp_path / who, body, monkeypatch if who == "ours" else None)
               for who in ("mb", "ours")}
    ss = {who: tmp_path / who / "x.ss" for who in screens}
    head = lambda p: [x for x in p.read_text().splitlines() if x.startswith("[") and not x.startswith("[ID")]  # noqa
    assert head(ss["ours"]) == head(ss["mb"])
    assert [r[:2] for r in _ss_rows(ss["ours"])] == [r[:2] for r in _ss_rows(ss["mb"])]
    assert [len(r) for r in _ss_rows(ss["ours"])] == [len(r) for r in _ss_rows(ss["mb"])]
    p_head = lambda who: (tmp_path / who / "x.run1.p").read_text().splitlines()[1]  # noqa
    assert "prop_ancfossil" in p_head("mb") and p_head("ours") == p_head("mb")
    intro = lambda s: s.split("Starting stepping-stone")[1].split("Chain results")[0].split("\n")[:-1]  # noqa
    assert intro(screens["ours"]) == intro(screens["mb"])
    assert len(_run_estimates(screens["ours"])) == len(_run_estimates(screens["mb"])) == 2


def test_fbd_ss_cluster_sampling_is_mrbayes_error(mb_double, tmp_path, monkeypatch):
    """samplestrat=cluster: MrBayes' ss stops at its first FBD prior with this sentence (as its mcmc does);
    mbgpu refuses the ss command with it."""
    body = FBD + " prset samplestrat=cluster;\n ss ngen=100 samplefreq=10 nruns=1 nchains=1 nsteps=2;\n"
    (tmp_path / "mb").mkdir()
    shutil.copy(DATA, tmp_path / "mb" / "primates.nex")
    (tmp_path / "mb" / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\n execute primates.nex;\n%send;\n" % body)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=120)
    sentence = "Sampling strategy Cluster for fossilized birth-death process not implemented"
    assert done.returncode != 0 and sentence in done.stdout
    with pytest.raises(ModelError) as e:
        _run_primates(mb_double, tmp_path / "ours", body, monkeypatch)
    assert sentence in e.value.one_line()


def _step_means(folder, nruns: int, column: str, p) -> list[list[float]]:
    """Per step of the ss plan `p`, each run's mean of `column` in the .p file over the step's samples after
    its burnin (primates.nex.runN.p: MrBayes names the files after the last executed file)."""
    out = [[] for _ in range(p.nsteps)]
    for run in range(1, nruns + 1):
        lines = (folder / ("primates.nex.run%d.p" % run)).read_text().splitlines()
        head = lines[1].split("\t")
        rows = [(int(r[0]), float(r[head.index(column)])) for r in (ln.split("\t") for ln in lines[2:])]
        for k in range(p.nsteps):
            start = p.burnin_samples * p.samplefreq + k * p.step_gens
            xs = [x for g, x in rows if start + p.step_burnin_gens < g <= start + p.step_gens]
            out[k].append(statistics.mean(xs))
    return out


@pytest.mark.slow
def test_fbd_ss_estimate_agrees_with_mrbayes(mb_double, tmp_path, monkeypatch):
    """64 runs of MrBayes and 32 of mbgpu, 10 steps each, on the FBD model above: their mean marginal
    likelihoods agree within the runs' spread (one run's SD about 2 log units in both; mb-double's mean
    -708.45 +- 0.16 over 128 runs), and so does each step's mean prop_ancfossil (0 near the posterior, about
    0.9 at power 0: the FBD prior's sampled ancestors, which the estimate alone barely feels)."""
    settings = " ss ngen=20000 samplefreq=10 printfreq=20000 nchains=1 nsteps=10 diagnfreq=20000"
    body = " set seed=11 swapseed=12;\n " + FBD + settings
    theirs = _run_estimates(_run_primates(mb_double, tmp_path / "mb", body + " nruns=64;\n"))
    mine = _run_estimates(_run_primates(mb_double, tmp_path / "ours", body + " nruns=32;\n", monkeypatch))
    assert len(theirs) == 64 and len(mine) == 32
    m1, m2 = statistics.mean(mine), statistics.mean(theirs)
    print("mbgpu %.4f +- %.4f   MrBayes %.4f +- %.4f" % (m1, _se(mine), m2, _se(theirs)))
    assert abs(m1 - m2) < 4 * math.hypot(_se(mine), _se(theirs)), (mine, theirs)
    p = stepping_stone.plan({"Ngen": 20000, "Samplefreq": 10, "Relburnin": "Yes", "Burninfrac": 0.25, "Burnin": 0},
                            {"Nsteps": 10, "Burninss": -1, "Alpha": 0.4, "Fromprior": "No"})
    ours, mb = _step_means(tmp_path / "ours", 32, "prop_ancfossil", p), _step_means(tmp_path / "mb", 64,
                                                                                     "prop_ancfossil", p)
    for k, (a, b) in enumerate(zip(ours, mb), 1):
        sa, sb = statistics.stdev(a) / math.sqrt(len(a)), statistics.stdev(b) / math.sqrt(len(b))
        print("step %d  prop_ancfossil mbgpu %.3f +- %.3f   MrBayes %.3f +- %.3f"
              % (k, statistics.mean(a), sa, statistics.mean(b), sb))
        assert abs(statistics.mean(a) - statistics.mean(b)) < 4 * math.hypot(sa, sb) + 0.01, k
