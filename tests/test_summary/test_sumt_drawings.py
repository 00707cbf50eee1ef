"""sumt's screen around its tables: MrBayes 3.2.7a's "General explanation" and its drawings of the
consensus tree ("Clade credibility values", "Phylogram"), byte for byte but for MrBayes' 3-space spacer,
which mbgpu's screen has nowhere (MrBayes prints some blank lines of the explanation without it)."""
import types

import numpy as np
import pytest

from mbgpu.output.tfile import TFileWriter, newick_of
from mbgpu.start_state import perturb, taxon_index
from mbgpu.summary import run_sumt
from mbgpu.summary.condraw import tip_label
from mbgpu.tree import Tree
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours

PRIMATES = ["Tarsius_syrichta", "Lemur_catta", "Homo_sapiens", "Pan", "Gorilla", "Pongo", "Hylobates",
            "Macaca_fuscata", "M_mulatta", "M_fascicularis", "M_sylvanus", "Saimiri_sciureus"]
_A = ("(2:0.2,((((((3:0.05,4:0.06):0.02,5:0.07):0.03,6:0.1):0.02,7:0.1):0.05,(((8:0.02,9:0.02):0.01,10:0.03)"
      ":0.02,11:0.05):0.08):0.1,12:0.2):0.05,1:0.25)")
_B = ("(2:0.21,(((((3:0.05,(4:0.06,5:0.07):0.01):0.03,6:0.1):0.02,7:0.1):0.05,((8:0.02,(9:0.02,10:0.03):0.01)"
      ":0.02,11:0.05):0.08):0.1,12:0.2):0.05,1:0.25)")
_HAND = {1: [_A, _A, _A, _B, _A, _B, _A, _A], 2: [_A, _B, _B, _A, _A, _B, _A, _B]}


class _Console:
    def __init__(self):
        self.lines = []

    def print(self, s=""):
        self.lines.append(s)


def _hand_runs(folder):
    for run, trees in _HAND.items():
        text = "#NEXUS\n[ID: 1]\nbegin trees;\n   translate\n"
        text += "".join("       %d %s%s\n" % (i + 1, t, ";" if i == 11 else ",") for i, t in enumerate(PRIMATES))
        text += "".join("   tree gen.%d = [&U] %s;\n" % (10 * g, t) for g, t in enumerate(trees)) + "end;\n"
        (folder / ("p.run%d.t" % run)).write_text(text)


def test_hand_made_runs_draw_as_mrbayes(tmp_path):
    """No MrBayes needed: its drawings of these files (two 58 % clades, names cut with `~`) are kept in
    tests/data; the explanation before the taxa list carries MrBayes' padding and the Minpartfreq value."""
    _hand_runs(tmp_path)
    con = _Console()
    run_sumt(types.SimpleNamespace(sumt={"Filename": str(tmp_path / "p"), "Minpartfreq": 0.25}, options={},
                                   mcmc={}), con)
    at, end = con.lines.index("   Clade credibility values:"), con.lines.index("   Calculating tree probabilities...")
    assert con.lines[at - 2:at] == ["", ""]
    assert con.lines[at:end] == (TEST_DATA / "sumt_drawings_12taxa.txt").read_text().split("\n")[:-1]
    at = con.lines.index("   General explanation:" + " " * 58)
    assert con.lines[at - 1] == con.lines[at + 1] == " " * 83
    assert "   sumt command and currently it is set to 0.25.  This is followed by a table  " in con.lines
    taxa = con.lines.index("   List of taxa in bipartitions:" + " " * 49)
    assert con.lines[taxa + 1:taxa + 3] == [" " * 83, "      1 -- Tarsius_syrichta"]


def test_tip_labels_like_mrbayes():
    """Label(): `name (k)` within 20 characters, a cut name ending in `~`; MrBayes spells 101 as 110."""
    assert tip_label("Saimiri_sciureus", 11) == "Saimiri_sciure~ (12)"
    assert tip_label("Saimiri_sciure", 11) == "Saimiri_sciure (12)"
    assert tip_label("A", 0) == "A (1)"
    assert tip_label("T101", 100) == "T101 (110)" and tip_label("T100", 99) == "T100 (100)"
    assert len(tip_label("x" * 40, 104)) == 20


def _caterpillar(names, rng) -> str:
    s = "%s:%.3f" % (names[0], rng.uniform(0.01, 0.2))
    for name in names[1:-1]:
        s = "(%s,%s:%.3f):%.3f" % (s, name, rng.uniform(0.01, 0.2), rng.uniform(0.001, 0.05))
    return "(%s,%s:0.1);" % (s[:s.rfind(":")], names[-1])


def _synthetic(folder, stem, names, nruns, seed):
    """A data file naming the taxa and `nruns` tree files: a caterpillar tree (deep: MrBayes draws it in
    parts past 11 levels) in 60 % of the samples, else one of four one-move neighbours (low supports)."""
    rng = np.random.default_rng(seed)
    base = Tree.from_newick(_caterpillar(names, rng), taxon_index(names, {})).deroot()
    trees = [base] + [perturb(base, 1, rng) for _ in range(4)]
    data = "#NEXUS\nbegin data;\n dimensions ntax=%d nchar=4;\n format datatype=dna;\n matrix\n" % len(names)
    (folder / (stem + ".nex")).write_text(data + "".join(" %s ACGT\n" % n for n in names) + " ;\nend;\n")
    for run in range(1, nruns + 1):
        name = "%s.run%d.t" % (stem, run) if nruns > 1 else stem + ".t"
        with open(folder / name, "w") as f:
            w = TFileWriter(f, 1234, names)
            for g in range(40):
                k = 0 if rng.random() < 0.6 else int(rng.integers(1, len(trees)))
                w.tree(g * 10, newick_of(trees[k]))
            w.close()


def _screen(text: str, theirs: bool) -> list[str]:
    """sumt's screen from 'Summarizing trees' to the end of the block, MrBayes' spacer cut."""
    lines = text.split("\n")
    start = next(k for k, ln in enumerate(lines) if "Summarizing trees" in ln)
    end = next((k for k in range(start, len(lines)) if "Exiting mrbayes block" in lines[k]), len(lines))
    out = [ln if not theirs or (len(ln) == 83 and not ln.strip()) else ln[3:] for ln in lines[start:end]]
    while out and not out[-1]:
        out.pop()
    return out


def _part(lines: list[str], first: str, last: str) -> list[str]:
    a = next(k for k, ln in enumerate(lines) if ln.startswith(first))
    return lines[a:next(k for k in range(a, len(lines)) if lines[k].startswith(last))]


_CASES = {   # name: (taxa, runs, sumt options)
    "caterpillar30": (["T%d" % (i + 1) for i in range(30)], 2, ""),
    "taxa105": (["T%d" % (i + 1) for i in range(105)], 2, ""),
    "short_one_run": (list("ABCDEF"), 1, "nruns=1"),
    "long_allcompat": (["Taxon_with_a_very_long_name_%d" % i for i in range(14)], 2, "contype=allcompat"),
    "primates_simple": (PRIMATES, 2, "conformat=simple minpartfreq=0.3"),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_sumt_screen_matches_mrbayes(tmp_path, monkeypatch, mb, case):
    """The same .t files through MrBayes and mbgpu: the whole sumt screen alike (the 105-taxon case: the
    explanation and the drawings; MrBayes wraps its .parts lines past 71 taxa, mbgpu does not)."""
    names, nruns, options = _CASES[case]
    for side in ("mb", "us"):
        (tmp_path / side).mkdir()
        _synthetic(tmp_path / side, "s", names, nruns, seed=7)
    block = " execute s.nex;\n sumt filename=s %s;" % options
    theirs = _screen(run_mb(mb, tmp_path / "mb", block), True)
    ours = _screen(run_ours(tmp_path / "us", block, monkeypatch), False)
    if len(names) > 71:
        for first, last in (("   General explanation", "      1 --"), ("   Clade credibility", "   Calculating")):
            assert _part(ours, first, last) == _part(theirs, first, last)
        assert any("Subtree rooted at node" in ln for ln in ours) and any("(110)" in ln for ln in ours)
    else:
        assert ours == theirs
    assert any(ln.startswith("   Phylogram (based on average branch lengths):") for ln in ours)
