"""`mcmc reweight=(down,up[,increment])` as MrBayes 3.2.7a (mbgpu.sampler.reweight): heated chains on
reweighted data, cross-likelihood heat swaps, MrBayes' screen lines, and its checks of the values."""
import io
import re
import signal
import subprocess

import numpy as np
import pytest

from mbgpu.analysis import division_pattern_sets
from mbgpu.checkpoint.session import load
from mbgpu.checkpoint.signals import RunStopped
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
from tests.test_checkpoint.common import run_in, same_outputs
from tests.test_checkpoint.test_signals import send_at
from tests.test_sampler.test_unlinked_trees import _split_freqs

RUN = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute primates.nex;\n"
       "lset nst=2;\nmcmc ngen=%d nruns=%d nchains=4 reweight=%s samplefreq=%d printfreq=%d diagnfreq=%d "
       "checkpoint=no filename=rw;\nend;\n")
CODON = ("charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
         "partition by_codon = 3: p1, p2, p3; set partition=by_codon;\n")
BY_CODON = RUN.replace("lset nst=2;", CODON + "lset nst=2;")
PARSIMONY = BY_CODON.replace("checkpoint=no", "checkpoint=no starttree=parsimony")


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
    """The lines from "Reweighting of characters" to the (last division's) pattern count (mbgpu's
    "Compressing" aside)."""
    lines = screen.splitlines()
    i = next(k for k, ln in enumerate(lines) if "Reweighting of characters" in ln)
    j = max(k for k, ln in enumerate(lines) if "unique site patterns" in ln)
    return [ln for ln in lines[i:j + 1] if "Compressing data matrix" not in ln]


def _chain_table(screen: str) -> list[str]:
    lines = screen.splitlines()
    i = lines.index("      Chain information:")
    j = next(k for k, ln in enumerate(lines) if ln.startswith("      Reweighting increment"))
    return lines[i:j + 1]


@pytest.mark.parametrize("value, run", [("(20,0)", RUN), ("(10,5,0.5)", RUN), ("(20,0)", BY_CODON),
                                        ("(10,5,0.5)", BY_CODON), ("(20,0)", PARSIMONY)])
def test_screen_lines_match_mrbayes(value, run, mb_double, tmp_path, monkeypatch):
    """What MrBayes prints about reweighting: the three lines before the pattern counts (the character
    counts, of all divisions together, even the `up` one that changes nothing) and the chain table's
    percent columns and increment line, as mb-double prints them; one division or three."""
    text = run % (200, 1, value, 100, 100, 100)
    theirs = _mb(mb_double, tmp_path / "m", text)
    ours = _mbgpu(tmp_path / "g", text, monkeypatch)
    assert _reweight_lines(ours) == _reweight_lines(theirs)
    assert _chain_table(ours) == _chain_table(theirs)


def _built(tmp_path, value: str = "(20,0)", nchains: int = 4, extra: str = ""):
    """(pattern sets, runs, Reweighting, MC3) of a one-run primates analysis (`extra`: commands before
    lset, e.g. a partition), started."""
    (tmp_path / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    (tmp_path / "in.nex").write_text("#NEXUS\nbegin mrbayes;\nset seed=5 swapseed=7;\nexecute primates.nex;\n%s"
                                     "lset nst=2;\nmcmcp nruns=1 nchains=%d reweight=%s;\nend;\n"
                                     % (extra, nchains, value))
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(tmp_path / "in.nex"))
    s = it.settings
    opts = RunOptions.from_settings(s.mcmc)
    sets = division_pattern_sets(s, Console(io.StringIO()))
    factory = select.choose_backend(s.options, Console(io.StringIO()), cuda_present=lambda: False)
    runs, _ = build_runs(s, sets, opts, factory, 5, sampler_mode="chain")
    rng = np.random.default_rng(7)
    rw = Reweighting.drawn(runs, scheme(s.mcmc, opts.nchains), rng)
    rw.start(runs, [list(range(nchains))])
    mc3 = MC3(runs, opts, rng, None, None)
    mc3.set_reweighting(rw)
    return sets, runs, rw, mc3


def _direct_lnl(chain, weights: list, sets) -> float:
    """The chain's current state's log likelihood with `weights` (one array per pattern set), by fresh
    numpy-backend instances."""
    total = 0.0
    for part, ps, w in zip(chain.parts, [p for g in sets for p in g if p.n_patterns], weights, strict=True):
        tree = chain.trees[part.tree]
        fresh = IncrementalPartition(ps.tip_partials(), w, part.inc.model, part.inc.mult, NumpyBackend, tree.n_tips)
        total += fresh.propose(tree)
    return total


@pytest.mark.parametrize("extra", ["", CODON, CODON + "unlink topology=(all);\n"])
def test_heated_chains_compute_on_their_ranks_weights(tmp_path, extra):
    """After generations with swaps every chain's lnL is its state's likelihood on the weights of the
    heat rank it has now (a fresh numpy computation): the cold chain's on the data's own weights, a
    heated one's not (it differs from the likelihood on the data's weights by far more than rounding);
    one division, three, three with a tree each. With a tree each, only generations without swaps: a
    move on one tree recomputes its division alone and MrBayes adds the others' lnL it stored before a
    swap, on the weights of the chain's former rank (LogLike's m->lnLike; AttemptSwap leaves them)."""
    sets, runs, rw, mc3 = _built(tmp_path, extra=extra)
    several_trees = "unlink" in extra
    swapped = 0
    for _ in range(120):
        mc3.step_all()
        before = list(mc3.ranks[0])
        if not several_trees:
            mc3.swap_all()
        swapped += before != mc3.ranks[0]
    assert swapped > 0 or several_trees
    w0 = rw.weights[0]
    for pos, chain in enumerate(runs[0]):
        rank = mc3.ranks[0][pos]
        assert chain.weight_rank == rank
        for k, ctx in enumerate(chain.ctxs):                                  # ParsSPR's weights too
            on_tree = [w for w, part in zip(rw.weights[rank], chain.parts) if part.tree == k]
            assert len(ctx.pattern_masks) == len(on_tree) and all(
                a is b for (_, a), b in zip(ctx.pattern_masks, on_tree))
        assert chain.lnl == pytest.approx(_direct_lnl(chain, rw.weights[rank], sets), abs=1e-6)
        if rank > 0:
            assert abs(chain.lnl - _direct_lnl(chain, w0, sets)) > 1.0
    data = [p.weights for g in sets for p in g if p.n_patterns]
    assert all(np.array_equal(a, b) for a, b in zip(w0, data))
    assert not all(np.array_equal(a, b) for a, b in zip(rw.weights[1], data))


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
        assert chain.lnl == pytest.approx(_direct_lnl(chain, rw.weights[mc3.ranks[0][pos]], sets), abs=1e-6)


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


def test_several_divisions_are_reweighted_together(tmp_path):
    """MrBayes draws over every division's characters at once (FillNumSitesOfPat runs over all compressed
    characters, n their total): each heated rank lowers and raises int(n*down/100) characters in all,
    spread over the divisions (not that many in each), and each division's weights stay non-negative."""
    sets, runs, rw, _ = _built(tmp_path, value="(30,0)", extra=CODON)
    data = [p.weights for g in sets for p in g if p.n_patterns]
    n = int(sum(w.sum() for w in data))
    assert n == 898 and len(data) == len(runs[0][0].parts) >= 3
    divisions = [part.division for part in runs[0][0].parts]
    for rank in (1, 2, 3):
        moved = {d: 0.0 for d in (1, 2, 3)}
        for w, d, division in zip(rw.weights[rank], data, divisions):
            moved[division] += np.abs(w - d).sum()
        assert sum(w.sum() for w in rw.weights[rank]) == pytest.approx(n)
        assert 0 < sum(moved.values()) <= 2 * int(n * 30 / 100)
        assert all(m > 0 for m in moved.values()), moved
        assert all((w >= 0).all() for w in rw.weights[rank])


@pytest.mark.parametrize("extra", ["", CODON + "unlink topology=(all);\n"], ids=["one-tree", "a-tree-per-codon"])
def test_parsimony_start_trees_score_heat_rank_1s_weights(extra, tmp_path, monkeypatch):
    """starttree=parsimony in a reweighted run: every chain's start tree (cold ones too) is built on heat
    rank 1's weights, drawn before the trees as MrBayes' FillNumSitesOfPat runs before BuildParsTrees
    (FindBestNode reads numSitesOfPat at 1 % numChains): the weights the builder got, tree by tree, are
    rank 1's of the checkpoint, not the data's."""
    import mbgpu.start_state as start_state

    seen, real = [], start_state.parsimony_tree

    def spy(masks, weights, rng, brlen):
        seen.append(np.array(weights))
        return real(masks, weights, rng, brlen)

    monkeypatch.setattr(start_state, "parsimony_tree", spy)
    text = _resumable(extra, "starttree=parsimony").replace("ngen=300", "ngen=2")
    run_in(tmp_path, text, monkeypatch)
    flat = load(str(tmp_path / "rw.ckp.h5"))["reweight/weights"]
    n_trees = 3 if extra else 1
    assert len(seen) == 2 * 3 * n_trees                        # 2 runs x 3 chains, each tree
    rank1 = np.concatenate(seen[:n_trees])
    assert np.array_equal(rank1, flat[1]) and not np.array_equal(rank1, flat[0])
    assert all(np.array_equal(w, seen[k % n_trees]) for k, w in enumerate(seen))


def _resumable(extra: str, more: str = "") -> str:
    """A reweighted primates run of 300 generations with checkpoints every 100 (`extra`: a partition)."""
    return ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute %s;\n%slset nst=2;\n"
            "mcmc ngen=300 nruns=2 nchains=3 reweight=(20,0) samplefreq=10 printfreq=50 diagnfreq=100 checkfreq=100 "
            "filename=rw %s;\nend;\n" % (TEST_DATA / "primates.nex", extra, more))


@pytest.mark.parametrize("extra, gen", [("", 150), (CODON, 200), (CODON + "unlink topology=(all);\n", 170)],
                         ids=["one-division", "by-codon", "a-tree-per-codon"])
def test_a_stopped_reweighted_run_continues_exactly(extra, gen, tmp_path, monkeypatch):
    """append=yes: a run stopped by a signal (its checkpoint written) and continued writes the .p, .t and
    .mcmc files of the run that was never stopped, byte for byte: the heat ranks' weights come back from
    the checkpoint, and the pattern sets' lnL each chain stored (with a tree per division, on a former
    rank's weights until a move on its tree, as in MrBayes)."""
    ref = tmp_path / "ref"
    ref.mkdir()
    run_in(ref, _resumable(extra), monkeypatch)
    cont = tmp_path / "cont"
    cont.mkdir()
    with monkeypatch.context() as m:
        send_at(m, gen, signal.SIGUSR1)
        with pytest.raises(RunStopped):
            run_in(cont, _resumable(extra), m)
    text = run_in(cont, _resumable(extra, "append=yes"), monkeypatch)
    assert "Continuing from checkpoint 'rw.ckp.h5' at generation %d" % gen in text
    names = [p.name for p in ref.iterdir() if p.suffix in (".p", ".t", ".mcmc")]
    assert len(names) >= 5 and same_outputs(ref, cont, names) == []
    assert "reweight/weights" in load(str(cont / "rw.ckp.h5"))


@pytest.mark.parametrize("extra, message", [
    (CODON + "prset ratepr=variable;",
     "mcmc reweight with a free rate multiplier (prset ratepr=variable) is not supported yet"),
    (CODON + "unlink brlens=(all); mcmcp starttree=parsimony;",
     "mcmc reweight with starttree=parsimony and unlinked branch lengths in a linked topology"),
])
def test_what_is_not_supported_yet_is_refused(extra, message, tmp_path, monkeypatch):
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes;\nexecute primates.nex;\n%s\n"
            "mcmc ngen=10 nruns=1 nchains=2 reweight=(10,0) filename=no;\nend;\n" % extra)
    with pytest.raises(NotImplementedYet, match=re.escape(message)):
        _mbgpu(tmp_path, text, monkeypatch)


def test_ss_with_reweight_matches_mrbayes_and_the_exact_value(mb_double, tmp_path, monkeypatch):
    """ss with reweight=(20,0) (MrBayes' AttemptSwap raises each lnL of ln r to the step's power) on the
    4-taxon JC69 data: the reweighting and schedule lines and the .ss columns as mb-double's, and the two
    runs' mean estimate, like MrBayes', near the exact marginal likelihood (the cold chain samples the
    data's own weights; the heated chains only help it)."""
    from tests.test_sampler.test_stepping_stone import (EXACT, MODEL, _run_estimates, _run_mb, _run_mbgpu,
                                                        _ss_rows)

    body = (" set seed=5 swapseed=6;\n " + MODEL + " ss ngen=12000 samplefreq=10 printfreq=12000 nruns=2 nchains=2 "
            "nsteps=6 reweight=(20,0) diagnfreq=12000;\n")
    theirs = _run_mb(mb_double, tmp_path / "mb", " set autoclose=yes nowarn=yes;\n" + body)
    ours = _run_mbgpu(tmp_path / "ours", body, monkeypatch)
    assert _reweight_lines(ours) == _reweight_lines(theirs)
    intro = lambda t: t.split("Starting stepping-stone")[1].split("Chain results")[0]  # noqa
    assert intro(ours) == intro(theirs)
    mine, mb = _ss_rows(tmp_path / "ours" / "d.nex.ss"), _ss_rows(tmp_path / "mb" / "d.nex.ss")
    assert [r[:2] for r in mine] == [r[:2] for r in mb] and [len(r) for r in mine] == [len(r) for r in mb]
    for est in (_run_estimates(ours), _run_estimates(theirs)):
        assert len(est) == 2 and abs(np.mean(est) - EXACT) < 0.35, (est, EXACT)


def _pcolumn(pfile, name: str, burnin: float = 0.25) -> np.ndarray:
    lines = pfile.read_text().splitlines()
    col = next(k for k, head in enumerate(lines[1].split("\t")) if head in (name, name + "{all}"))
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
@pytest.mark.parametrize("run, ngen", [(RUN, 20000), (BY_CODON, 10000)], ids=["one-division", "by-codon"])
def test_cold_chain_posterior_and_swap_rates_match_mrbayes(run, ngen, mb_double, tmp_path, monkeypatch):
    """reweight=(20,0), two runs of four chains on primates (one division, or three by codon position): the
    cold chains' split frequencies agree with mb-double's within 0.1, their mean TL and LnL within Monte
    Carlo error (4 standard errors of batch means), and the swap acceptance rates between every two heats
    are in MrBayes' range (within 0.1; both low, each heat's weights differing by 20 % of the characters)."""
    text = run % (ngen, 2, "(20,0)", 20, ngen, ngen)
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
