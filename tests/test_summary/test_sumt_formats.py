"""sumt against MrBayes on tree files with known tree frequencies: the credible-set lines of the screen
(MrBayes prints the 50/90/95 % sets only when a tree lies below them, the 99 % set always) and
`conformat=simple` (the consensus twice: with probabilities as labels, then without)."""
import re

import numpy as np
import pytest

from mbgpu.output.tfile import TFileWriter, newick_of
from mbgpu.start_state import perturb, taxon_index
from mbgpu.tree import Tree
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

TAXA = ["Tarsius_syrichta", "Lemur_catta", "Homo_sapiens", "Pan", "Gorilla", "Pongo", "Hylobates",
        "Macaca_fuscata", "M_mulatta", "M_fascicularis", "M_sylvanus", "Saimiri_sciureus"]
T1 = ("((((((Homo_sapiens:0.05,Pan:0.06):0.02,Gorilla:0.07):0.03,Pongo:0.1):0.02,Hylobates:0.1):0.05,"
      "(((Macaca_fuscata:0.02,M_mulatta:0.02):0.01,M_fascicularis:0.03):0.02,M_sylvanus:0.05):0.08):0.1,"
      "Saimiri_sciureus:0.2,(Lemur_catta:0.2,Tarsius_syrichta:0.25):0.05);")
# tree counts after burn-in; the cumulative probabilities cross 50/90/95/99 % in different places
CASES = {"a": [50, 30, 15, 5], "b": [40, 40, 10, 6, 4], "c": [92, 4, 4], "d": [30, 30, 30, 10], "e": [96, 2, 2],
         "f": [45, 5, 50], "g": [100], "h": [97, 3]}


def _write_runs(folder, counts, seed=0):
    """NAME.run1.t and NAME.run2.t: a third of burn-in copies of the first tree, then the trees in
    `counts` in random order (each run the same counts)."""
    rng = np.random.default_rng(seed)
    trees = [Tree.from_newick(T1, taxon_index(TAXA, {})).deroot()]
    while len(trees) < len(counts):
        t = perturb(trees[-1], 1, rng)
        if all(t.splits() != u.splits() for u in trees):
            trees.append(t)
    seq = [k for k, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(seq)
    seq = [0] * (len(seq) // 3) + seq
    for run in (1, 2):
        with open(folder / ("s.run%d.t" % run), "w") as f:
            w = TFileWriter(f, 1234, TAXA)
            for g, k in enumerate(seq):
                w.tree(g * 10, newick_of(trees[k]))
            w.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_credible_sets_and_simple_consensus_match_mrbayes(tmp_path, monkeypatch, mb, name):
    block = " execute primates.nex;\n sumt filename=s nruns=2 outputname=fig;\n" \
            " sumt filename=s nruns=2 conformat=simple outputname=simple;"
    theirs, ours = stage(tmp_path / "mb", TEST_DATA / "primates.nex"), stage(tmp_path / "us", TEST_DATA / "primates.nex")
    for folder in (theirs, ours):
        _write_runs(folder, CASES[name])
    screen_mb = run_mb(mb, theirs, block)
    screen_us = run_ours(ours, block, monkeypatch)

    def credible(text):
        return [ln.strip() for ln in text.splitlines() if "credible set" in ln or "Credible sets" in ln]
    assert credible(screen_us) == credible(screen_mb) and credible(screen_mb)
    for stem in ("fig", "simple"):
        for ext in ("con.tre", "parts", "tstat"):
            assert (ours / (stem + "." + ext)).read_text() == (theirs / (stem + "." + ext)).read_text(), (stem, ext)
    assert "0." in (ours / "simple.con.tre").read_text() or CASES[name] == [100]
    mine, theirs_t = ((f / "fig.trprobs").read_text().splitlines() for f in (ours, theirs))
    if len(set(CASES[name])) == len(CASES[name]):         # no ties: the same file (our [ID]-less session too)
        assert mine == theirs_t
    else:                                                  # equal trees may be listed in another order

        def trees(lines):
            return sorted(re.sub(r"tree_\d+ \[p = ([\d.]+), P = [\d.]+\]", r"\1", ln) for ln in lines if "tree tree_" in ln)
        assert trees(mine) == trees(theirs_t)
