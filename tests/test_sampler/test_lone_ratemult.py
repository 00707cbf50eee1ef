"""A rate multiplier of one division (`prset applyto=(1) ratepr=variable`, or `ratepr=variable` with each
division alone on its tree: `unlink brlens=(all)` or `unlink topology=(all)`), against MrBayes 3.2.7a.

MrBayes makes it a parameter `Ratemultiplier{k}` of one value with its Dirichlet and Slider moves, which
then take their one-rate cases (Move_RateMult_Dir: m' = 1 with log Hastings (alphaPi - 1) log m;
Move_RateMult_Slider: both picked rates are the one, m' = 2 m (1 - y)); LogPrior counts nothing for
it (`nValues > 1` only). Checked: the .p header (with MrBayes' extra tab between multiplier
parameters), the model summary and move list, Gen-0 LnPr, the state after moves rescored by mb-double,
and the posterior of m{1} against MrBayes' own runs (slow).
"""
import io
import math
import re
import subprocess

import numpy as np
import pytest

import mbgpu.sampler.batch_step as batch_step
from mbgpu.console import Console
from mbgpu.core.param_moves import dirichlet_move, simplex_slider
from mbgpu.core.rng import seed_states
from mbgpu.errors import MbgpuError
from mbgpu.interpreter import Interpreter
from mbgpu.sampler.param_moves import ParamMove
from tests.conftest import TEST_DATA
from tests.test_sampler.test_unlinked_trees import _last_tree

CODON = ("charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
         "partition by_codon = 3: p1, p2, p3; set partition=by_codon;")
APPLYTO = CODON + " prset applyto=(1) ratepr=variable;"             # Ratemultiplier{1}; {2,3} fixed
BRLENS = CODON + " prset ratepr=variable; unlink brlens=(all);"      # {1} {2} {3}, one topology
UNLINKED = CODON + " prset ratepr=variable; unlink topology=(all);"  # {1} {2} {3}, three topologies
FOUR = ("charset c1 = 1-200; charset c2 = 201-400; charset c3 = 401-600; charset c4 = 601-898; "
        "partition four = 4: c1, c2, c3, c4; set partition=four; prset ratepr=variable; unlink brlens=(all); "
        "link brlens=(1,2); link brlens=(3,4);")                     # {1,2} {3,4}: two multipliers of two
CASES = {"applyto": APPLYTO, "brlens": BRLENS, "unlinked": UNLINKED, "two-groups": FOUR,
         "report-ratio": APPLYTO + " report ratemult=ratio;"}     # m{1} over itself: MrBayes writes 1


def _mbgpu(folder, text: str, monkeypatch) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    monkeypatch.chdir(folder)
    (folder / "cmd.nex").write_text(text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "cmd.nex"))
    return out.getvalue()


def _mb(binary, folder, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (folder / "cmd.nex").write_text(text)
    done = subprocess.run([str(binary), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _row(pfile, gen: int) -> dict:
    lines = pfile.read_text().splitlines()
    header = lines[1].split()
    row = next(ln.split() for ln in lines[2:] if ln.split()[0] == str(gen))
    return dict(zip(header, row))


def test_dirichlet_move_of_one_rate_sets_it_to_one():
    """Move_RateMult_Dir with nRates 1: the proportion m n / n = m is not normalised, its one-part
    Dirichlet draw is 1, so m' = 1 and log Hastings = (alphaPi - 1) log m (alphaPi = tuning x 1)."""
    move = ParamMove("Dirichlet(Ratemultiplier{1})", 0, "dirichlet", 0.75, 50.0, "alpha", scale=np.ones(1),
                     alpha_factor=1.0)
    new, log_h = move.propose(np.array([1.6]), np.random.default_rng(1))
    assert new.tolist() == [1.0] and log_h == pytest.approx(49.0 * math.log(1.6), rel=1e-12)
    x = np.array([1.6])
    assert dirichlet_move(seed_states(3, [(0,)])[0], x, 50.0, np.ones(1)) == pytest.approx(49.0 * math.log(1.6))
    assert x.tolist() == [1.0]


@pytest.mark.parametrize("delta, lo, hi", [(0.3, 0.7, 1.3), (5.0, 0.0, 2.0)], ids=["window", "clipped"])
def test_slider_of_one_rate_scales_it_by_a_uniform_factor(delta, lo, hi):
    """Move_RateMult_Slider with nRates 1 picks the one rate twice (indexJ = indexI): y = 1/2 + delta
    (u - 1/2) (delta at most 1 - 2 DIR_MIN / 2m), the second write wins, m' = 2 m (1 - y): m'/m uniform on
    (1 - delta, 1 + delta), log Hastings 0; the interpreted and the compiled move alike."""
    rng, state = np.random.default_rng(2), seed_states(5, [(0,)])[0]
    move = ParamMove("Slider(Ratemultiplier{1})", 0, "slider", 0.75, delta, "delta", scale=np.ones(1))
    interpreted, compiled = [], []
    for _ in range(4000):
        new, log_h = move.propose(np.array([1.6]), rng)
        assert log_h == 0.0
        interpreted.append(new[0] / 1.6)
        x = np.array([1.6])
        assert simplex_slider(state, x, delta, np.ones(1)) == 0.0
        compiled.append(x[0] / 1.6)
    for got in (np.array(interpreted), np.array(compiled)):
        assert lo <= got.min() and got.max() <= hi
        assert got.mean() == pytest.approx((lo + hi) / 2, abs=0.02)
        assert got.var() == pytest.approx((hi - lo) ** 2 / 12, rel=0.08)


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_summary_moves_and_gen0_like_mrbayes(case, mb_double, tmp_path, monkeypatch):
    """The .p header (an extra tab between two multiplier parameters, as MrBayes writes it), the .mcmc
    header, the model
    summary's parameters and priors, the move list with its percentages and the Gen-0 LnPr: mb-double's."""
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute primates.nex;\n%s\n"
            "mcmc ngen=200 samplefreq=100 printfreq=100 diagnfreq=100 nruns=2 nchains=2 filename=r;\nend;\n"
            % CASES[case])
    screen = _mbgpu(tmp_path / "g", text, monkeypatch)
    mb_screen = _mb(mb_double, tmp_path / "m", text)
    want = (tmp_path / "m" / "r.run1.p").read_text().splitlines()
    got = (tmp_path / "g" / "r.run1.p").read_text().splitlines()
    assert got[1] == want[1]
    gen = [[ln for ln in (tmp_path / side / "r.mcmc").read_text().splitlines() if ln.startswith("Gen")]
           for side in ("g", "m")]
    assert gen[0] == gen[1] and len(gen[0]) == 1          # the .mcmc header: each move's acceptance column
    assert ("\t\t" in want[1]) == (case not in ("applyto", "report-ratio"))
    if case == "report-ratio":
        for lines in (got, want):
            assert [ln.split("\t")[-1] for ln in lines[2:]] == ["1.000000e+00"] * (len(lines) - 2)
    assert float(got[2].split("\t")[2]) == pytest.approx(float(want[2].split("\t")[2]), abs=1e-4)   # LnPr, %e

    def moves(s):
        return [ln.strip() for ln in s.split("following moves:")[1].split("\n\n")[0].splitlines()[1:]]

    def params(s):
        return [ln.strip() for ln in s.splitlines() if re.search(r"Parameter  =|Prior      =|Partitions? +=", ln)]

    assert moves(screen) == moves(mb_screen)
    assert params(screen) == params(mb_screen)
    assert any("Slider(Ratemultiplier{1" in m for m in moves(screen))


@pytest.mark.parametrize("model, path", [(APPLYTO, "core"), (APPLYTO, "interpreted"), (BRLENS, "core"),
                                         (BRLENS, "interpreted")],
                         ids=["applyto-core", "applyto-interpreted", "brlens-core", "brlens-interpreted"])
def test_state_after_moves_scores_as_mrbayes(model, path, mb_double, tmp_path, monkeypatch):
    """After 1500 generations (the multipliers moved away from 1) mbgpu's trees and m{k}, given to mb-double
    as its start state (`startvals tau= V{k}= ratemultiplier{k}=`), give mbgpu's LnL and LnPr (1e-6)."""
    if path == "interpreted":
        monkeypatch.setattr(batch_step, "core_for", lambda chains: None)
    setting = ("set seed=11 swapseed=3 precision=15 scientific=no; execute primates.nex;\n %s "
               "prset statefreqpr=fixed(equal);" % model)
    _mbgpu(tmp_path / "g", "#NEXUS\nbegin mrbayes; %s mcmc ngen=1500 samplefreq=100 printfreq=100 nruns=1 nchains=1 "
           "filename=u; end;\n" % setting, monkeypatch)
    got = _row(tmp_path / "g" / "u.p", 1500)
    mults = {c: float(v) for c, v in got.items() if c.startswith("m{")}
    assert any(abs(v - 1.0) > 1e-3 for v in mults.values()), mults
    names = ["V{1}", "V{2}", "V{3}"] if model == BRLENS else ["V"]
    files = ["u.tree%d.t" % k for k in (1, 2, 3)] if model == BRLENS else ["u.t"]
    taxa = [ln.split()[0] for ln in (TEST_DATA / "primates.nex").read_text().split("matrix")[1].splitlines()[1:13]]
    trees = [_last_tree(tmp_path / "g" / name, taxa) for name in files]
    tree_block = "begin trees;\n" + "".join(" tree t%d = %s;\n" % (k, t.rstrip(";")) for k, t in enumerate(trees, 1))
    start = "tau=t1 " + " ".join("%s=t%d" % (v, k) for k, v in enumerate(names, 1)) + " " + " ".join(
        "ratemultiplier{%s}=(%r)" % (c[2:-1], v) for c, v in mults.items())
    _mb(mb_double, tmp_path / "m", "#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%sbegin mrbayes; %s "
        "startvals %s; mcmc ngen=1 samplefreq=1 nruns=1 nchains=1 mcmcdiagn=no checkpoint=no filename=u; end;\n"
        % (tree_block + "end;\n", setting.replace("execute primates.nex;", ""), start))
    want = _row(tmp_path / "m" / "u.p", 0)
    assert list(want) == list(got)
    for col in ["LnL", "LnPr"] + list(mults):
        assert abs(float(got[col]) - float(want[col])) < 1e-6, (col, got[col], want[col])


@pytest.mark.parametrize("commands, division", [(CODON + " prset applyto=(1) ratepr=dirichlet(2);", 1),
                                                (CODON + " prset ratepr=dirichlet(1,3,1); unlink brlens=(all);", 2)])
def test_a_dirichlet_value_other_than_one_is_refused(commands, division, tmp_path, monkeypatch):
    """MrBayes' one-rate moves add (alpha - 1) log-ratios that its LogPrior never counts (its LnPr drifts
    from the prior): not reproduced, refused (for the division whose own value is not 1)."""
    with pytest.raises(MbgpuError, match="leaving division %d with a rate multiplier of its own .* is not supported "
                       "yet" % division) as err:
        _mbgpu(tmp_path / "x", "#NEXUS\nbegin mrbayes; execute primates.nex;\n %s mcmc ngen=10; end;\n" % commands,
               monkeypatch)
    assert err.value.where is not None


def test_startvals_ratemultiplier_with_several_multipliers_is_mrbayes_error(mb_double, tmp_path, monkeypatch):
    """MrBayes: "Several parameters matched the abbreviated name 'ratemultiplier'" once a division has
    a multiplier of its own (here {1}, and {2,3} fixed); mbgpu stops there too."""
    text = "#NEXUS\nbegin mrbayes;\nexecute primates.nex;\n%s\nstartvals ratemultiplier=(1.5,1,1);\nend;\n" % APPLYTO
    assert "Several parameters matched the abbreviated name 'ratemultiplier'" in subprocess.run(
        [str(mb_double), "cmd.nex"], cwd=_folder(tmp_path / "m", text), capture_output=True, text=True,
        timeout=300).stdout
    with pytest.raises(MbgpuError, match="Several parameters matched the abbreviated name 'ratemultiplier'"):
        _mbgpu(tmp_path / "g", text, monkeypatch)


def _folder(folder, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (folder / "cmd.nex").write_text(text)
    return folder


def _m1(pfile) -> np.ndarray:
    """m{1} of a .p file, the first quarter of the samples left out."""
    lines = pfile.read_text().splitlines()
    col = lines[1].split().index("m{1}")
    values = np.array([float(ln.split()[col]) for ln in lines[2:]])
    return values[len(values) // 4:]


@pytest.mark.slow
def test_posterior_of_a_weakly_determined_multiplier_matches_mrbayes(mb, tmp_path, monkeypatch):
    """Division 1 of 40 characters with a multiplier of its own (division 2, the other 858, fixed at 1):
    the Dirichlet move's jumps to exactly 1 are accepted as MrBayes accepts them (a Hastings ratio other
    than m^(alphaPi - 1) changes the share of samples at 1), the Slider spreads m{1} as MrBayes' does.
    Two runs of two chains, 20000 generations; pooled over two seeds here and four for MrBayes (one run
    alone puts 8% to 24% of its samples at 1). Seen: MrBayes 0.907 / sd 0.095 / 15.5% at 1."""
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=%d swapseed=%d;\nexecute primates.nex;\n"
            "charset d1 = 1-40; charset d2 = 41-898; partition two = 2: d1, d2; set partition=two;\n"
            "prset applyto=(1) ratepr=variable;\nmcmc ngen=20000 nruns=2 nchains=2 samplefreq=10 printfreq=20000 "
            "diagnfreq=20000 checkpoint=no filename=w;\nend;\n")
    ours, theirs = [], []
    for s in (1, 2, 3, 4):
        _mb(mb, tmp_path / ("m%d" % s), text % (s, s))
        theirs += [_m1(tmp_path / ("m%d" % s) / ("w.run%d.p" % r)) for r in (1, 2)]
    for s in (1, 2):
        _mbgpu(tmp_path / ("g%d" % s), text % (s, s), monkeypatch)
        ours += [_m1(tmp_path / ("g%d" % s) / ("w.run%d.p" % r)) for r in (1, 2)]
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    assert 0.05 < (theirs == 1.0).mean() < 0.3
    assert abs((ours == 1.0).mean() - (theirs == 1.0).mean()) < 0.08
    assert ours.mean() == pytest.approx(theirs.mean(), abs=0.04)
    assert 0.7 < ours.std() / theirs.std() < 1.4
