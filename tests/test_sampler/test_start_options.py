"""mcmc options that set where chains start: starttree=random, nperts, startparams=reset (each against
MrBayes' own Gen-0 row), and savetrees, which changes nothing in the results."""
import subprocess

import pytest

from mbgpu.output.tfile import read_tfile
from mbgpu.start_state import taxon_index
from mbgpu.tree import Tree
from tests.test_sampler.primates_runs import gen0, run_mbgpu, write_run

TREE = ("((((((Homo_sapiens:0.05,Pan:0.06):0.02,Gorilla:0.07):0.03,Pongo:0.1):0.02,Hylobates:0.1):0.05,"
        "(((Macaca_fuscata:0.02,M_mulatta:0.02):0.01,M_fascicularis:0.03):0.02,M_sylvanus:0.05):0.08):0.1,"
        "Saimiri_sciureus:0.2,(Lemur_catta:0.2,Tarsius_syrichta:0.25):0.05);")
ONE = "ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no"
PARTS = ("charset first = 1-898\\3; charset rest = 2-898\\3 3-898\\3; partition by = 2: first, rest;\n"
         "  set partition=by; prset ratepr=variable;")


def _both(tmp_path, monkeypatch, mb_double, commands: str, mcmc: str):
    """(MrBayes' Gen-0 row, mbgpu's) of one command file."""
    for side in ("mb", "mbgpu"):
        write_run(tmp_path / side, {"t1": TREE}, commands, mcmc)
    done = subprocess.run([str(mb_double), "run.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    run_mbgpu(tmp_path / "mbgpu")
    return gen0(tmp_path / "mb" / "out.p"), gen0(tmp_path / "mbgpu" / "out.p")


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
