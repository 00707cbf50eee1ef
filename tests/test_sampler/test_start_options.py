"""mcmc options that set where chains start: starttree=random, nperts, startparams=reset (each against
MrBayes' own Gen-0 row), and savetrees, which changes nothing in the results."""
import re
import subprocess

import numpy as np
import pytest

from mbgpu.analysis import division_pattern_sets
from mbgpu.parsimony_start import parsimony_tree
from mbgpu.tree import random_tree
from tests.helpers import interp_for

from mbgpu.output.tfile import read_tfile
from mbgpu.start_state import taxon_index
from mbgpu.tree import Tree
from tests.test_sampler.primates_runs import gen0, primates_data, run_mbgpu, write_run

TREE = ("((((((Homo_sapiens:0.05,Pan:0.06):0.02,Gorilla:0.07):0.03,Pongo:0.1):0.02,Hylobates:0.1):0.05,"
        "(((Macaca_fuscata:0.02,M_mulatta:0.02):0.01,M_fascicularis:0.03):0.02,M_sylvanus:0.05):0.08):0.1,"
        "Saimiri_sciureus:0.2,(Lemur_catta:0.2,Tarsius_syrichta:0.25):0.05);")
ONE = "ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no"
PARTS = ("charset first = 1-898\\3; charset rest = 2-898\\3 3-898\\3; partition by = 2: first, rest;\n"
         "  set partition=by; prset ratepr=variable;")


def _both(tmp_path, monkeypatch, mb_double, commands: str, mcmc: str):
    """(MrBayes' Gen-0 row, mbgpu's) of one command file."""
    _both_files(tmp_path, monkeypatch, mb_double, commands, mcmc)
    return gen0(tmp_path / "mb" / "out.p"), gen0(tmp_path / "mbgpu" / "out.p")


def _both_files(tmp_path, monkeypatch, mb_double, commands: str, mcmc: str) -> None:
    """Run one command file with MrBayes (tmp_path/mb) and mbgpu (tmp_path/mbgpu)."""
    for side in ("mb", "mbgpu"):
        write_run(tmp_path / side, {"t1": TREE}, commands, mcmc)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    run_mbgpu(tmp_path / "mbgpu")


def _splits_of_gen0(tfile) -> set:
    tf = read_tfile(str(tfile))
    n, full = len(tf.taxa), (1 << len(tf.taxa)) - 1
    sides = {full ^ b if b & 1 else b for b, _len in tf.trees[0].lengths["edges"]}
    return {s for s in sides if 1 < bin(s).count("1") < n - 1}, tf.taxa


def _bits(tree: Tree) -> set:
    return {sum(1 << t for t in s) for s in tree.splits()}


def test_starttree_random_drops_the_startvals_trees(tmp_path, monkeypatch, mb_double):
    """MrBayes draws new random trees with branches of 0.02 (TL 0.42 on 12 taxa, the LnPr that goes
    with it) although startvals set tau and V."""
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, "startvals tau=t1 v=t1;", ONE + " starttree=random")
    for row in (theirs, ours):
        assert float(row["TL"]) == pytest.approx(0.42)
    assert float(ours["LnPr"]) == pytest.approx(float(theirs["LnPr"]), abs=1e-6)


@pytest.mark.parametrize("nperts", [1, 3])
def test_nperts_perturbs_the_user_tree_by_nnis(tmp_path, monkeypatch, mb_double, nperts):
    """MrBayes' RandPerturb: nperts NNIs, branch lengths kept (same TL and LnPr), at most nperts splits
    changed, at least one."""
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, "startvals tau=t1 v=t1;", ONE + " nperts=%d" % nperts)
    for col in ("TL", "LnPr"):
        assert float(ours[col]) == pytest.approx(float(theirs[col]), abs=1e-6)
    for side in ("mb", "mbgpu"):
        splits, taxa = _splits_of_gen0(tmp_path / side / "out.t")
        start = _bits(Tree.from_newick(TREE, taxon_index(taxa, {})).deroot())
        assert 1 <= len(splits - start) <= nperts, side


def test_startparams_reset_ignores_startvals_of_parameters(tmp_path, monkeypatch, mb_double):
    """The rate multipliers go back to 1, the start tree stays: the whole Gen-0 row equals MrBayes'."""
    theirs, ours = _both(tmp_path, monkeypatch, mb_double, PARTS + " startvals tau=t1 v=t1 ratemultiplier=(0.5,1.25);",
                         ONE + " startparams=reset")
    assert set(ours) == set(theirs)
    for col, value in theirs.items():
        assert float(ours[col]) == pytest.approx(float(value), rel=1e-9, abs=1e-6), col
    assert float(ours["m{1}"]) == 1.0 and float(ours["TL{all}"]) == pytest.approx(1.53)


def test_savetrees_changes_no_output(tmp_path, monkeypatch):
    files = {}
    for flag in ("no", "yes"):
        folder = tmp_path / flag
        write_run(folder, {"t1": TREE}, "", "ngen=400 nchains=2 nruns=2 samplefreq=20 printfreq=200 "
                  "diagnfreq=100 checkpoint=no savetrees=%s" % flag)
        monkeypatch.chdir(folder)
        run_mbgpu(folder)
        files[flag] = {p.name: p.read_bytes() for p in folder.glob("out.*")}
    assert files["no"] and files["no"] == files["yes"]


def _fitch_length(newick: str, index: dict, masks, weights) -> float:
    """The Fitch length of a Newick tree, computed here from scratch (recursive sets on the parsed tree)."""
    tree = Tree.from_newick(newick, index)
    kids = tree.children()

    def sets(v):
        if v < tree.n_tips:
            return masks[v], 0.0
        acc, cost = None, 0.0
        for c in kids[v]:
            s, k = sets(c)
            cost += k
            if acc is None:
                acc = s
                continue
            both = acc & s
            cost += float(((both == 0) * weights).sum())
            acc = np.where(both != 0, both, acc | s)
        return acc, cost
    return sets(tree.root)[1]


def test_starttree_parsimony_builds_short_trees_like_mrbayes(tmp_path, monkeypatch, mb_double):
    """MrBayes rebuilds the start trees by random addition and parsimony, branches 0.02 (the same TL and
    LnPr as mbgpu's); every start tree of both is far shorter (Fitch) than random trees and the two
    programs' lengths are alike (random addition: not the same trees)."""
    four = ONE.replace("nchains=1 nruns=1", "nchains=2 nruns=2") + " starttree=parsimony"
    _both_files(tmp_path, monkeypatch, mb_double, "startvals tau=t1 v=t1;", four)
    for r in (1, 2):
        theirs, ours = (gen0(tmp_path / side / ("out.run%d.p" % r)) for side in ("mb", "mbgpu"))
        for col in ("TL", "LnPr"):
            assert float(ours[col]) == pytest.approx(float(theirs[col]), abs=1e-6)
    (tmp_path / "d").mkdir()
    it = interp_for("#NEXUS\n" + primates_data(), tmp_path / "d")
    ps = division_pattern_sets(it.settings)[0][0]
    index = taxon_index(it.settings.matrix.taxa, {})       # .t files number the taxa 1..n in matrix order
    lengths = {}
    for side in ("mb", "mbgpu"):
        lengths[side] = [_fitch_length(re.search(r"tree gen\.0 = \[&U\] (.*;)", (tmp_path / side /
                                                ("out.run%d.t" % r)).read_text()).group(1), index, ps.masks,
                                       ps.weights) for r in (1, 2)]
    rng = np.random.default_rng(1)
    random_len = np.mean([_fitch_length(random_tree(12, rng).to_newick(it.settings.matrix.taxa), index,
                                        ps.masks, ps.weights) for _ in range(20)])
    assert max(lengths["mbgpu"] + lengths["mb"]) < 0.9 * random_len, (lengths, random_len)
    assert min(lengths["mbgpu"]) <= max(lengths["mb"]) + 5, lengths


def test_parsimony_tree_recovers_a_perfect_phylogeny():
    """Characters that are the splits of a tree (no homoplasy): stepwise addition finds that tree."""
    rng = np.random.default_rng(4)
    truth = random_tree(15, rng)
    splits = sorted(truth.splits(), key=sorted)
    masks = np.array([[2 if t in s else 1 for s in splits] for t in range(15)], dtype=np.uint32)
    for seed in range(3):
        got = parsimony_tree(masks, np.ones(len(splits)), np.random.default_rng(seed))
        assert got.splits() == truth.splits()
        assert np.allclose(got.brlen[got.parent >= 0], 0.02)


def test_parsimony_start_with_constraints_is_refused(tmp_path, monkeypatch):
    from mbgpu.errors import NotImplementedYet
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotImplementedYet, match="starttree=parsimony with topology constraints"):
        write_run(tmp_path / "x", {"t1": TREE}, "constraint c = Homo_sapiens Pan; prset topologypr=constraints(c);",
                  ONE + " starttree=parsimony")
        monkeypatch.chdir(tmp_path / "x")
        run_mbgpu(tmp_path / "x")


@pytest.mark.parametrize("options", ["nruns=2", "nruns=2 printall=no", "nruns=2 printmax=2",
                                     "nruns=2 printall=no printmax=2", "nruns=3 printmax=6",
                                     "nruns=3 printmax=5 printall=no", "nruns=1 printmax=3", "nruns=2 nchains=1",
                                     "nruns=1 nchains=1"])
def test_printall_and_printmax_screen_lines_like_mrbayes(options, tmp_path, monkeypatch, mb_double):
    """MrBayes' PrintToScreen: the generation-0 line character for character (every chain starts from
    the startvals tree, so the values agree too), later lines with their numbers masked."""
    nchains = "" if "nchains" in options else " nchains=4"
    mcmc = "ngen=20 samplefreq=10 printfreq=10 mcmcdiagn=no checkpoint=no %s%s" % (options, nchains)
    grid = "mcmcp %s%s; startvals tau=t1 v=t1;" % (options, nchains)      # startvals reach every chain
    for side in ("mb", "mbgpu"):
        write_run(tmp_path / side, {"t1": TREE}, grid, mcmc)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    monkeypatch.chdir(tmp_path / "mbgpu")
    ours = run_mbgpu(tmp_path / "mbgpu")

    def lines(text):
        return [line for line in text.splitlines() if re.match(r"\s+\d+ -- [-\[(.]", line)]
    want, got = lines(done.stdout), lines(ours)
    assert len(got) == len(want) == 3
    assert got[0] == want[0]
    for line in got[1:]:        # which chain is cold there depends on the swaps, so only the layout is compared
        assert re.match(r"^\s+(10|20) -- (([\[(]?-\d+\.\d{3}[\])]?(\[\d\])?|\.\.|\*) )+-- \d+:\d\d:\d\d$", line), line


@pytest.mark.parametrize("before, after", [("mcmcp nruns=1 nchains=2;", "nruns=2 nchains=4"),
                                           ("", "nruns=2 nchains=2 nchains=4")])
def test_startvals_reach_the_chains_that_existed_then(before, after, tmp_path, monkeypatch, mb_double):
    """MrBayes keeps start values in the runs x chains grid of the moment; chains a later nruns or nchains
    adds (or drops and adds again) start from random trees: the same chains start from t1 in both."""
    mcmc = "ngen=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no " + after
    for side in ("mb", "mbgpu"):
        write_run(tmp_path / side, {"t1": TREE}, before + " startvals tau=t1 v=t1;", mcmc)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    monkeypatch.chdir(tmp_path / "mbgpu")
    ours = run_mbgpu(tmp_path / "mbgpu")

    def from_t1(text):
        line = next(x for x in text.splitlines() if re.match(r"\s+0 -- [\[(]", x))
        values = re.findall(r"-\d+\.\d{3}", line)
        return [v == values[0] for v in values]
    assert from_t1(ours) == from_t1(done.stdout)
    assert from_t1(ours).count(True) in (2, 4) and not all(from_t1(ours))
