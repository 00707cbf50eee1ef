"""`sumt showtreeprobs=yes` (every sampled tree drawn with its probability) and `savebrparams=yes`
(`.brparams`, `minbrparamfreq`) against MrBayes 3.2.7a on the same .t files, and the packed topologies
(order arrays) that fix which trees tie and how each is drawn."""
import re
import types

import numpy as np
import pytest

from mbgpu.errors import InputFileError, NotImplementedYet
from mbgpu.output.tfile import newick_of, parse_newick
from mbgpu.splits import nested_splits
from mbgpu.summary import run_sumt
from mbgpu.summary.treeorder import newick, order_array, rebuild
from mbgpu.tree import random_tree
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

_SPACED = re.compile(r"^      (Calculating|Tree \d|Credible|   \d+ % credible|Saving)")


def _small_data(folder, ntax: int, nchar: int) -> str:
    """The first `ntax` primates cut to `nchar` sites: short enough for many distinct sampled trees."""
    rows = [ln.split() for ln in (TEST_DATA / "primates.nex").read_text().splitlines()
            if ln[:1].isalpha() and len(ln) > 100][:ntax]
    text = "#NEXUS\nbegin data;\n dimensions ntax=%d nchar=%d;\n format datatype=dna gap=-;\n matrix\n" % (ntax, nchar)
    text += "".join(" %-20s %s\n" % (name, seq[:nchar]) for name, seq in rows) + " ;\nend;\n"
    (folder / "small.nex").write_text(text)
    return "small.nex"


def _blocks(screen: str, spacer: bool) -> list[list[str]]:
    """Each sumt's tree-probability block (Calculating ... the 99 % set) and its 'Saving' line, with
    MrBayes' in-block spacer cut from its own lines (the drawings have none)."""
    out, cur = [], None
    for line in screen.splitlines():
        if spacer:
            line = _SPACED.sub(r"   \1", line)
        if line.startswith("   Calculating tree probabilities") or line.startswith("   Saving branch"):
            cur = [line]
            out.append(cur)
        elif cur is not None and not cur[0].startswith("   Saving"):
            cur.append(line)
            if "99 % credible set" in line:
                cur = None
    return out


_SUMTS = ("sumt filename=small nruns=2 showtreeprobs=yes savebrparams=yes outputname=%s1;\n"
          " sumt relburnin=no burnin=50 minbrparamfreq=0.0 outputname=%s2;")


def test_showtreeprobs_and_brparams_match_mrbayes(tmp_path, monkeypatch, mb):
    """Short mb runs (9 taxa, ~60 distinct trees), then MrBayes' and our sumt on the same .t files: the
    drawings, credible sets, .trprobs and .brparams alike. (Rooted clock trees drew and ordered alike
    too, but sumt refuses them until it summarizes node ages as MrBayes does.)"""
    folder = stage(tmp_path / "runs")
    data = _small_data(folder, 9, 80)
    run_mb(mb, folder, " set seed=11 swapseed=3;\n execute %s;\n"
           " mcmc ngen=20000 samplefreq=50 printfreq=10000 diagnfreq=10000 nchains=2 file=small;" % data,
           "runs.nex")
    theirs = run_mb(mb, folder, " execute %s;\n" % data + _SUMTS % ("mb", "mb"))
    ours = run_ours(folder, " execute %s;\n" % data + _SUMTS % ("us", "us"), monkeypatch)
    mine, want = _blocks(ours.replace('file "us', 'file "mb'), False), _blocks(theirs, True)
    assert mine == want and len(want) == 4
    assert sum(1 for b in want for ln in b if ln.startswith("   Tree ")) > 50
    for k in ("1", "2"):
        assert ((folder / ("us%s.trprobs" % k)).read_text().replace("#NEXUS\n", "")
                == re.sub(r"\[ID: \d+\]\n", "", (folder / ("mb%s.trprobs" % k)).read_text().replace("#NEXUS\n", "")))
    for k in ("1", "2"):
        assert (folder / ("us%s.brparams" % k)).read_bytes() == (folder / ("mb%s.brparams" % k)).read_bytes()
    assert "NA" in (folder / "us2.brparams").read_text()        # minbrparamfreq=0: rare splits are listed too


# Five taxa, eight trees a run of three topologies; MrBayes 3.2.7a's output for `sumt filename=h
# showtreeprobs=yes savebrparams=yes minbrparamfreq=0.2` (default burn-in: the first 2 trees of a run).
_T1 = "((2:0.1,3:0.2):0.05,(4:0.3,5:0.4):0.06,1:0.5)"
_T2 = "((2:0.11,(3:0.21,4:0.31):0.07):0.08,5:0.41,1:0.51)"
_T3 = "(2:0.12,((3:0.22,5:0.42):0.09,4:0.32):0.1,1:0.52)"
_RUNS = {1: [_T1, _T1, _T2, _T1, _T3, _T1, _T2, _T1], 2: [_T2, _T1, _T1, _T3, _T3, _T1, _T2, _T2]}
_BR_ROWS = ["51 11 21 31 41 5 6 8 7 10 9", "50 10 20 30 40 5 6 8 7 NA NA", "52 12 22 32 42 5 6 NA NA NA NA",
            "50 10 20 30 40 NA NA NA NA NA NA", "51 11 21 31 41 NA NA NA NA NA NA", "50 10 20 30 40 NA NA NA NA NA NA",
            "50 10 20 30 40 5 6 8 7 10 9", "52 12 22 32 42 5 6 8 7 10 9", "52 12 22 32 42 NA NA NA NA NA NA",
            "50 10 20 30 40 NA NA NA NA NA NA", "51 11 21 31 41 NA NA NA NA NA NA", "51 11 21 31 41 NA NA NA NA NA NA"]
_TREE1 = ["   Tree 1 (p = 0.417, P = 0.417):", "",
          "   " + " " * 30 + "/" + "-" * 28 + " ",
          "   /" + "-" * 29 + "+" + " " * 29,
          "   |" + " " * 29 + "\\" + "-" * 28 + " ",
          "   |" + " " * 58 + " ",
          "   |" + " " * 29 + "/" + "-" * 28 + " ",
          "   +" + "-" * 29 + "+" + " " * 29,
          "   |" + " " * 29 + "\\" + "-" * 28 + " ",
          "   |", "   \\" + "-" * 58 + " "]
_TREE2_TOP = ["   /" + "-" * 58 + " ", "   |" + " " * 58 + " ",
              "   |" + " " * 19 + "/" + "-" * 38 + " ", "   +" + "-" * 19 + "+" + " " * 39]


class _Console:
    def __init__(self):
        self.lines = []

    def print(self, s=""):
        self.lines.append(s)


def _hand_runs(folder):
    taxa = "ABCDE"
    for run, trees in _RUNS.items():
        text = "#NEXUS\n[ID: 1]\nbegin trees;\n   translate\n"
        text += "".join("       %d %s%s\n" % (i + 1, t, ";" if i == 4 else ",") for i, t in enumerate(taxa))
        text += "".join("   tree gen.%d = [&U] %s;\n" % (10 * g, t) for g, t in enumerate(trees)) + "end;\n"
        (folder / ("h.run%d.t" % run)).write_text(text)


def _settings(folder, **extra):
    return types.SimpleNamespace(sumt=dict({"Nruns": 2, "Filename": str(folder / "h")}, **extra), options={},
                                 mcmc={})


def test_hand_made_runs_give_mrbayes_drawings_and_brparams(tmp_path):
    """No MrBayes needed: its output on these files, kept here. A partition missing from some trees gets
    NA once its lengths in the run are used up (rows are not trees: MrBayes' layout)."""
    _hand_runs(tmp_path)
    con = _Console()
    run_sumt(_settings(tmp_path, Showtreeprobs="Yes", Savebrparams="Yes", Minbrparamfreq=0.2), con)
    rows = (tmp_path / "h.brparams").read_text().splitlines()
    assert rows[0] == "\t".join("length[%d]" % i for i in range(1, 12))
    assert rows[1:] == ["\t".join(v if v == "NA" else "%.6e" % (int(v) / 100) for v in r.split()) for r in _BR_ROWS]
    at = con.lines.index("   Tree 1 (p = 0.417, P = 0.417):")
    assert con.lines[at - 3:at + 11] == ["   Calculating tree probabilities...", "", ""] + _TREE1
    at = con.lines.index("   Tree 2 (p = 0.333, P = 0.750):")
    assert con.lines[at + 2:at + 6] == _TREE2_TOP
    assert con.lines[-5:] == ["   Credible sets of trees (3 trees sampled):"] + [
        "      %d %% credible set contains %d trees" % (x, k) for x, k in ((50, 2), (90, 3), (95, 3), (99, 3))]
    saving = con.lines.index('   Saving branch parameters to file "%s.brparams"' % (tmp_path / "h"))
    assert con.lines[saving + 1] == "" and con.lines[saving + 2].startswith("   Summary statistics for partitions")


def test_brparams_threshold_counts_all_runs_against_one_runs_samples(tmp_path):
    """MrBayes keeps a partition while its count over all runs is at least (int)(Minbrparamfreq x the
    trees sampled per run): 1.0 keeps the splits seen in half of all trees, 0.0 keeps every split."""
    _hand_runs(tmp_path)
    widths = []
    for f in (1.0, 0.75, 0.0):
        run_sumt(_settings(tmp_path, Savebrparams="Yes", Minbrparamfreq=f), _Console())
        widths.append(len((tmp_path / "h.brparams").read_text().splitlines()[0].split("\t")))
    assert widths == [5, 9, 11]      # the 5 tips; then splits seen 5 and 4 times (of 12); then all


def test_sumt_refuses_rooted_trees_and_savebrparams_trees_without_lengths(tmp_path):
    """Rooted trees without branch lengths stop MrBayes 3.2.7a's sumt halfway (no .vstat rows, an empty
    .con.tre): refused; clock trees with lengths are summarized (test_sumt_clock.py)."""
    _hand_runs(tmp_path)
    for run in (1, 2):
        path = tmp_path / ("h.run%d.t" % run)
        path.write_text(re.sub(r":[0-9.]+", "", path.read_text().replace("[&U]", "[&R]")))
    for save in ("Yes", "No"):
        with pytest.raises(NotImplementedYet, match="rooted trees without branch lengths"):
            run_sumt(_settings(tmp_path, Savebrparams=save), _Console())
    _hand_runs(tmp_path)
    for run in (1, 2):
        path = tmp_path / ("h.run%d.t" % run)
        path.write_text(re.sub(r":[0-9.]+", "", path.read_text()))
    with pytest.raises(InputFileError, match="no branch lengths"):
        run_sumt(_settings(tmp_path, Savebrparams="Yes"), _Console())


def _random_rooted(rng, tips):
    nodes = list(tips)
    while len(nodes) > 1:
        i, j = sorted(rng.choice(len(nodes), 2, replace=False))
        b = nodes.pop(j)
        a = nodes.pop(i)
        nodes.append((a, b))
    return nodes[0]


@pytest.mark.parametrize("n", [3, 4, 7, 12])
def test_order_arrays_rebuild_the_same_tree(n):
    """The packed form and its rebuilding keep the topology, rooted or not, whatever the written root."""
    rng = np.random.default_rng(n)
    index = {str(i + 1): i for i in range(n)}
    for _ in range(20):
        t = random_tree(n, rng)
        topo, _ = parse_newick(newick_of(t), index, None)
        order = order_array(topo, n, False)
        back, _ = parse_newick(newick(rebuild(order, n, False), False), index, None)
        assert nested_splits(back, n) == nested_splits(topo, n)
        assert order_array(back, n, False) == order
        rooted = _random_rooted(rng, range(n))
        order = order_array(rooted, n, True)
        back, _ = parse_newick(newick(rebuild(order, n, True), True), index, None)
        assert _clades(back) == _clades(rooted) and order_array(back, n, True) == order


def _clades(v) -> set:
    out = set()

    def walk(x) -> frozenset:
        if isinstance(x, int):
            return frozenset([x])
        s = frozenset().union(*(walk(c) for c in x))
        out.add(s)
        return s

    walk(v)
    return out
