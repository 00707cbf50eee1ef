"""`mcmc reweight=(down,up[,increment])` as MrBayes 3.2.7a (mbgpu.sampler.reweight): heated chains on
reweighted data, cross-likelihood heat swaps, MrBayes' screen lines, and its checks of the values."""
import io
import re
import subprocess

import numpy as np
import pytest

from mbgpu.analysis import division_pattern_sets
from mbgpu.console import Console
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.interpreter import Interpreter
from mbgpu.likelihood import select
from mbgpu.likelihood.numpy_backend import NumpyBackend
from mbgpu.sampler.incremental import IncrementalPartition
from mbgpu.sampler.mc3 import MC3, RunOptions
from mbgpu.sampler.reweight import Reweighting, draw, scheme
from mbgpu.sampler.setup import build_runs
from tests.conftest import TEST_DATA
from tests.test_sampler.test_unlinked_trees import _split_freqs

RUN = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute primates.nex;\n"
       "lset nst=2;\nmcmc ngen=%d nruns=%d nchains=4 reweight=%s samplefreq=%d printfreq=%d diagnfreq=%d "
       "checkpoint=no filename=rw;\nend;\n")


def _mbgpu(folder, text: str, monkeypatch) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (folder / "run.nex").write_text(text)
    monkeypatch.chdir(folder)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    return out.getvalue()


def _mb(binary, folder, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (folder / "run.nex").write_text(text)
    done = subprocess.run([str(binary), "run.nex"], cwd=folder, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _reweight_lines(screen: str) -> list[str]:
    """The lines from "Reweighting of characters" to the pattern count (mbgpu's "Compressing" aside)."""
    lines = screen.splitlines()
    i = next(k for k, ln in enumerate(lines) if "Reweighting of characters" in ln)
    j = next(k for k, ln in enumerate(lines) if "unique site patterns" in ln)
    return [ln for ln in lines[i:j + 1] if "Compressing data matrix" not in ln]


def _chain_table(screen: str) -> list[str]:
    lines = screen.splitlines()
    i = lines.index("      Chain information:")
    j = next(k for k, ln in enumerate(lines) if ln.startswith("      Reweighting increment"))
    return lines[i:j + 1]


@pytest.mark.parametrize("value", ["(20,0)", "(10,5,0.5)"])
def test_screen_lines_match_mrbayes(value, mb_double, tmp_path, monkeypatch):
    """What MrBayes prints about reweighting: the three lines before the pattern count (the character
    counts, even the `up` one that changes nothing) and the chain table's percent columns and increment
    line, as mb-double prints them."""
    text = RUN % (200, 1, value, 100, 100, 100)
    theirs = _mb(mb_double, tmp_path / "m", text)
    ours = _mbgpu(tmp_path / "g", text, monkeypatch)
    assert _reweight_lines(ours) == _reweight_lines(theirs)
    assert _chain_table(ours) == _chain_table(theirs)


def _built(tmp_path, value: str = "(20,0)", nchains: int = 4):
    """(settings, pattern sets, runs, ranks, Reweighting, MC3) of a one-run primates analysis, started."""
    (tmp_path / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (tmp_path / "in.nex").write_text("#NEXUS\nbegin mrbayes;\nset seed=5 swapseed=7;\nexecute primates.nex;\n"
                                     "lset nst=2;\nmcmcp nruns=1 nchains=%d reweight=%s;\nend;\n" % (nchains, value))
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(tmp_path / "in.nex"))
    s = it.settings
    opts = RunOptions.from_settings(s.mcmc)
    sets = division_pattern_sets(s, Console(io.StringIO()))
    factory = select.choose_backend(s.options, Console(io.StringIO()), cuda_present=lambda: False)
    runs, _ = build_runs(s, sets, opts, factory, 5, sampler_mode="chain")
    rng = np.random.default_rng(7)
    rw = Reweighting(runs, scheme(s.mcmc, opts.nchains), rng)
    rw.start(runs, [list(range(nchains))])
    mc3 = MC3(runs, opts, rng, None, None)
    mc3.set_reweighting(rw)
    return sets, runs, rw, mc3


def _direct_lnl(chain, weights, sets) -> float:
    """The chain's current state's log likelihood with `weights`, by a fresh numpy-backend instance."""
    (part,), (ps,) = chain.parts, [p for g in sets for p in g]
    fresh = IncrementalPartition(ps.tip_partials(), weights, part.inc.model, part.inc.mult, NumpyBackend,
                                 chain.tree.n_tips)
    return fresh.propose(chain.tree)


def test_heated_chains_compute_on_their_ranks_weights(tmp_path):
    """After generations with swaps every chain's lnL is its state's likelihood on the weights of the
    heat rank it has now (a fresh numpy computation): the cold chain's on the data's own weights, a
    heated one's not (it differs from the likelihood on the data's weights by far more than rounding)."""
    sets, runs, rw, mc3 = _built(tmp_path)
    swapped = 0
    for _ in range(120):
        mc3.step_all()
        before = list(mc3.ranks[0])
        mc3.swap_all()
        swapped += before != mc3.ranks[0]
    assert swapped > 0
    w0 = rw.weights[0][0]
    for pos, chain in enumerate(runs[0]):
        rank = mc3.ranks[0][pos]
        assert chain.weight_rank == rank
        assert chain.ctxs[0].pattern_masks[0][1] is rw.weights[rank][0]      # ParsSPR's weights too
        assert chain.lnl == pytest.approx(_direct_lnl(chain, rw.weights[rank][0], sets), abs=1e-6)
        if rank > 0:
            assert abs(chain.lnl - _direct_lnl(chain, w0, sets)) > 1.0
    assert np.array_equal(rw.weights[0][0], w0) and not np.array_equal(rw.weights[1][0], w0)


def test_swap_scores_each_state_on_the_others_weights(tmp_path):
    """An accepted swap leaves each chain with its state's lnL on the weights of the rank it took
    (AttemptSwap's lnLikeStateAonDataB), before any further step."""
    sets, runs, rw, mc3 = _built(tmp_path)
    for _ in range(400):
        mc3.step_all()
        before = list(mc3.ranks[0])
        mc3.swap_all()
        if before != mc3.ranks[0]:
            break
    else:
        pytest.fail("no swap accepted")
    for pos, chain in enumerate(runs[0]):
        assert chain.lnl == pytest.approx(_direct_lnl(chain, rw.weights[mc3.ranks[0][pos]][0], sets), abs=1e-6)


def test_weights_are_drawn_as_mrbayes_draws_them():
    """FillNumSitesOfPat: rank 0 keeps the data's weights; each heated rank lowers int(n*down/100)
    characters' patterns by the increment and raises as many (not int(n*up/100): MrBayes loops
    nToDecrease times again), never below zero nor a pattern raised and lowered beyond its count."""
    w0 = np.array([5.0, 1.0, 3.0, 1.0, 10.0, 2.0])
    n = 22
    for inc in (1.0, 0.5):
        ranks = draw(w0, 4, 50.0, inc, np.random.default_rng(1))
        assert ranks[0] is w0 and len(ranks) == 4
        for w in ranks[1:]:
            assert w.sum() == pytest.approx(n)
            assert (w >= 0).all() and not np.array_equal(w, w0)
            moved = np.abs(w - w0) / inc
            assert moved.sum() <= 2 * int(n * 50 / 100) and (moved <= w0 + 1e-12).all()


@pytest.mark.parametrize("value, message", [
    ("(101,0)", "The reweighting parameter must be between 0 and 100"),
    ("(50,60)", "The sum of the reweighting parameters cannot exceed 100 %"),
    ("(100,0)", "Cannot decrease weight of all characters"),
    ("(10,0,2)", "The reweighting increment must be between 0 and 1"),
    ("(10,0,0)", "The reweighting increment must be between 0 and 1"),
    ("(10)", "Reweight expects (down,up) or (down,up,increment)"),
])
def test_values_mrbayes_refuses_are_refused(value, message, tmp_path, mb_double):
    """The values MrBayes' DoMcmcParm refuses (its messages), and mb-double refuses them too."""
    text = "#NEXUS\nexecute primates.nex;\nbegin mrbayes;\nmcmcp reweight=%s;\nend;\n" % value
    (tmp_path / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (tmp_path / "in.nex").write_text(text)
    with pytest.raises(CommandError, match=re.escape(message)):
        Interpreter(Console(io.StringIO())).run_file(str(tmp_path / "in.nex"))
    done = subprocess.run([str(mb_double), "in.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    if value != "(10)":                        # MrBayes' parser stops there before its own checks
        assert message in done.stdout


@pytest.mark.parametrize("extra, message", [
    ("charset a = 1-449; charset b = 450-898; partition two = 2: a, b; set partition=two;",
     "mcmc reweight with a partitioned data set (2 divisions) is not supported yet"),
    ("mcmcp starttree=parsimony;", "mcmc reweight with starttree=parsimony is not supported yet"),
])
def test_what_is_not_supported_yet_is_refused(extra, message, tmp_path, monkeypatch):
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes;\nexecute primates.nex;\n%s\n"
            "mcmc ngen=10 nruns=1 nchains=2 reweight=(10,0) filename=no;\nend;\n" % extra)
    with pytest.raises(NotImplementedYet, match=re.escape(message)):
        _mbgpu(tmp_path, text, monkeypatch)


def _pcolumn(pfile, name: str, burnin: float = 0.25) -> np.ndarray:
    lines = pfile.read_text().splitlines()
    col = lines[1].split("\t").index(name)
    rows = [float(ln.split("\t")[col]) for ln in lines[2:]]
    return np.array(rows[int(len(rows) * burnin):])


def _batch_se(x: np.ndarray, batches: int = 20) -> float:
    means = np.array([b.mean() for b in np.array_split(x, batches)])
    return float(means.std(ddof=1) / np.sqrt(batches))


def _swap_rates(screen: str, run: int) -> list[float]:
    """The acceptance rates of swaps between every two heats (the upper triangle) of a run's swap table."""
    lines = screen.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip() == "Chain swap information for run %d:" % run)
    rows = [ln.split("|")[1].split() for ln in lines[i + 4:i + 8]]
    return [float(x) for k, row in enumerate(rows) for x in row[k:]]


@pytest.mark.slow
def test_cold_chain_posterior_and_swap_rates_match_mrbayes(mb_double, tmp_path, monkeypatch):
    """reweight=(20,0), two runs of four chains on primates: the cold chains' split frequencies agree with
    mb-double's within 0.1, their mean TL and LnL within Monte Carlo error (4 standard errors of batch
    means), and the swap acceptance rates between every two heats are in MrBayes' range (within 0.1; both low, each
    heat's weights differing by 20 % of the characters)."""
    text = RUN % (20000, 2, "(20,0)", 20, 20000, 20000)
    theirs = _mb(mb_double, tmp_path / "m", text)
    ours = _mbgpu(tmp_path / "g", text, monkeypatch)
    got, want = {}, {}
    for r in (1, 2):
        for freqs, side in ((got, "g"), (want, "m")):
            for c, f in _split_freqs(tmp_path / side / ("rw.run%d.t" % r)).items():
                freqs[c] = freqs.get(c, 0.0) + f / 2
    for clade in set(got) | set(want):
        assert abs(got.get(clade, 0.0) - want.get(clade, 0.0)) < 0.1, (sorted(clade), got.get(clade), want.get(clade))
    for name in ("TL", "LnL"):
        g = np.concatenate([_pcolumn(tmp_path / "g" / ("rw.run%d.p" % r), name) for r in (1, 2)])
        m = np.concatenate([_pcolumn(tmp_path / "m" / ("rw.run%d.p" % r), name) for r in (1, 2)])
        se = np.hypot(_batch_se(g), _batch_se(m))
        assert abs(g.mean() - m.mean()) < 4 * se, (name, g.mean(), m.mean(), se)
    for r in (1, 2):
        for a, b in zip(_swap_rates(ours, r), _swap_rates(theirs, r)):
            assert abs(a - b) < 0.1, (r, _swap_rates(ours, r), _swap_rates(theirs, r))
