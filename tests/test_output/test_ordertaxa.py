"""`mcmc ordertaxa=yes` against MrBayes 3.2.7a (mb-double): the tree lines of the .t files.

MrBayes' PrintTree means to order every node's children by their smallest taxon, but its second loop
never moves off the last node of the first (the root's child), so it only orders the two subtrees at
the base of the written tree, by their smallest taxon number (the outgroup counting as -1); every other
node keeps its order. mbgpu writes the same. The child order below the base is how each program happens
to store the tree (mbgpu's differs from MrBayes' for most start trees, with or without ordertaxa), so the
lines are compared exactly where the two programs write the ordertaxa=no line alike, and otherwise with
the order below the base normalised: the same tree, the same lengths, the same subtrees at the base in
the same order.
"""
import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter
from mbgpu.output.tfile import newick_of
from mbgpu.tree import Tree

from tests.test_mrbayes_gen0 import _strip_mrbayes, _taxa

DATA = Path(__file__).resolve().parents[1] / "data"


def _shape(newick: str):
    """(label, children or None, ':length') of a newick string with numbers or names as labels."""
    pos = 0

    def node():
        nonlocal pos
        kids, label = None, ""
        if newick[pos] == "(":
            kids = []
            while newick[pos] in "(,":
                pos += 1
                kids.append(node())
            pos += 1
        else:
            label = re.match(r"[^:,()]+", newick[pos:]).group(0)
            pos += len(label)
        length = re.match(r"(:[^,();]+)?", newick[pos:]).group(0)
        pos += len(length)
        return label, kids, length
    return node()


def _sorted(node) -> str:
    label, kids, length = node
    return label + length if kids is None else "(%s)%s" % (",".join(sorted(_sorted(k) for k in kids)), length)


def _base_kept(newick: str) -> str:
    """The newick with every node below the base in a canonical child order, the base's order kept."""
    return "(%s)" % ",".join(_sorted(k) for k in _shape(newick)[1])


def _random_tree(names: list[str], seed: int) -> str:
    rng = np.random.default_rng(seed)
    nodes = ["%s:%.6f" % (n, rng.uniform(0.01, 0.2)) for n in names]
    rng.shuffle(nodes)
    while len(nodes) > 3:
        i, j = sorted(rng.choice(len(nodes), 2, replace=False))
        b, a = nodes.pop(j), nodes.pop(i)
        nodes.append("(%s,%s):%.6f" % (a, b, rng.uniform(0.005, 0.1)))
    return "(%s);" % ",".join(nodes)


def _gen0_lines(folder: Path, data: str, tree: str, commands: str, mb_double, monkeypatch) -> dict:
    """{(program, ordertaxa): the `tree gen.0` line's newick} from one generation from `tree`."""
    lines = {}
    for side in ("mb", "mbgpu"):
        for order in ("no", "yes"):
            where = folder / ("%s_%s" % (side, order))
            where.mkdir(parents=True)
            (where / "data.nex").write_text(data + "\nbegin trees;\n  tree start = %s\nend;\n" % tree)
            (where / "cmd.nex").write_text(
                "#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes seed=1 swapseed=1;\n  execute data.nex;\n"
                "  %s\n  startvals tau=start V=start;\n  mcmc ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 "
                "mcmcdiagn=no checkpoint=no ordertaxa=%s filename=out;\nend;\n" % (commands, order))
            if side == "mb":
                done = subprocess.run([str(mb_double), "cmd.nex"], cwd=where, capture_output=True, text=True,
                                      timeout=300)
                assert done.returncode == 0, done.stdout[-2000:]
            else:
                monkeypatch.chdir(where)
                Interpreter(Console(io.StringIO())).run_file("cmd.nex")
            text = (where / "out.t").read_text()
            lines[side, order] = re.search(r"tree gen\.0 = \[&U\] (.*);", text).group(1)
    return lines


def _outgroup(og: str, names: list[str]) -> str:
    """`outgroup og`, then a delete and restore of another taxon: MrBayes 3.2.7a roots the trees it writes
    at the outgroup only once its taxon list is rebuilt (a plain `outgroup` leaves them at taxon 1)."""
    if not og:
        return ""
    other = names[-2] if og in (names[-1], str(len(names))) else names[-1]
    return "outgroup %s; delete %s; restore %s;" % (og, other, other)


CASES = [("primates.nex", og, seeds) for og, seeds in (("", range(4)), ("3", range(4)), ("Pan", range(3)),
                                                      ("12", range(3)))]
CASES += [("mesquite_dna.nex", og, range(6)) for og in ("", "Pongo_abelii", "8")]


@pytest.mark.parametrize("name, outgroup, seeds", CASES,
                         ids=["%s-outgroup-%s" % (n.split("_")[0].split(".")[0], og or "default")
                              for n, og, _ in CASES])
def test_gen0_tree_like_mrbayes(name, outgroup, seeds, mb_double, tmp_path, monkeypatch):
    """Random start trees with branch lengths, primates (12 taxa) and an 8-taxon set, several outgroups."""
    data = _strip_mrbayes((DATA / name).read_text())
    names = _taxa(data)
    exact = changed = 0
    for seed in seeds:
        got = _gen0_lines(tmp_path / str(seed), data, _random_tree(names, seed), _outgroup(outgroup, names),
                          mb_double, monkeypatch)
        assert _sorted(_shape(got["mbgpu", "no"])) == _sorted(_shape(got["mb", "no"]))     # the same tree
        assert _base_kept(got["mbgpu", "yes"]) == _base_kept(got["mb", "yes"])
        assert _sorted(_shape(got["mbgpu", "yes"])) == _sorted(_shape(got["mbgpu", "no"]))  # order only
        if got["mbgpu", "no"] == got["mb", "no"]:
            assert got["mbgpu", "yes"] == got["mb", "yes"]
            exact += 1
        changed += got["mb", "yes"] != got["mb", "no"]
    assert changed > 0                                   # MrBayes reordered the base at least once


@pytest.mark.parametrize("seed, outgroup, swapped", [(2, "", True), (2, "3", True), (2, "Pongo_abelii", False),
                                                     (5, "", False)])
def test_same_written_tree_gives_mrbayes_line_exactly(seed, outgroup, swapped, mb_double, tmp_path, monkeypatch):
    """Start trees both programs write alike with ordertaxa=no: the ordertaxa=yes lines are equal too, byte
    for byte, where MrBayes swaps the base's subtrees and where it keeps them."""
    data = _strip_mrbayes((DATA / "mesquite_dna.nex").read_text())
    names = _taxa(data)
    got = _gen0_lines(tmp_path, data, _random_tree(names, seed), _outgroup(outgroup, names), mb_double,
                      monkeypatch)
    assert got["mbgpu", "no"] == got["mb", "no"]
    assert got["mbgpu", "yes"] == got["mb", "yes"]
    assert (got["mb", "yes"] != got["mb", "no"]) == swapped


def _tree(parent: list[int]) -> Tree:
    return Tree(sum(1 for v in range(len(parent)) if v not in parent), parent,
                [0.01 * (v + 1) for v in range(len(parent))])


def test_only_the_subtrees_at_the_base_are_ordered():
    """Taxa 1-6, outgroup 1 beside the stored root: the base's subtrees (3,4) and (5,(2,6)) go smallest
    taxon first; the children inside them keep the order ordertaxa=no writes them in."""
    t = _tree([6, 9, 7, 7, 8, 9, -1, 6, 6, 8])
    plain = newick_of(t, precision=1)
    assert re.sub(r":[^,()]+", "", plain) == "((3,4),(5,(2,6)),1)"
    ordered = newick_of(t, precision=1, order_taxa=True)
    assert re.sub(r":[^,()]+", "", ordered) == "((5,(2,6)),(3,4),1)"
    assert _sorted(_shape(ordered)) == _sorted(_shape(plain))
    assert newick_of(t, precision=1, order_taxa=False) == plain


def test_base_away_from_the_root_and_other_outgroups():
    """The outgroup's neighbour need not be the stored root: its child and its parent are the two subtrees."""
    t = _tree([6, 9, 7, 7, 8, 9, -1, 6, 6, 8])
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=1)) == "(6,(5,(1,(3,4))),2)"
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=1, order_taxa=True)) == "((5,(1,(3,4))),6,2)"
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=2, order_taxa=True)) == "((1,(5,(2,6))),4,3)"


def test_bifurcating_root_puts_the_outgroup_side_first():
    """A root of two children (MrBayes' rooted trees): the outgroup counts as -1, its side comes first."""
    t = _tree([6, 8, 8, 7, 7, -1, 5, 5, 6])
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=4)) == "((1,(2,3)),(4,5))"
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=4, order_taxa=True)) == "((4,5),(1,(2,3)))"
    assert re.sub(r":[^,()]+", "", newick_of(t, outgroup=0, order_taxa=True)) == "((1,(2,3)),(4,5))"


def _run_ours(folder: Path, order: str, monkeypatch) -> None:
    folder.mkdir()
    shutil.copy(DATA / "primates.nex", folder / "primates.nex")
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes seed=3 swapseed=3;\n  execute primates.nex;\n"
        "  mcmc ngen=400 samplefreq=10 printfreq=200 nruns=2 nchains=2 ordertaxa=%s filename=out;\n"
        "  sumt filename=out;\nend;\n" % order)
    monkeypatch.chdir(folder)
    Interpreter(Console(io.StringIO())).run_file("cmd.nex")


SUMT_FILES = ("out.parts", "out.tstat", "out.vstat", "out.con.tre", "out.trprobs")


def _trees(path: Path) -> list[str]:
    return [line.split("] ", 1)[1].rstrip(";") for line in path.read_text().splitlines() if "tree gen." in line]


def test_ordertaxa_changes_the_order_in_tree_lines_only(tmp_path, monkeypatch):
    """mbgpu samples the same states either way (MrBayes' swap stays in its chain and changes its path from
    that seed on; ours is on the written copy); the trees, the .p files and sumt's files are the same."""
    for order in ("yes", "no"):
        _run_ours(tmp_path / order, order, monkeypatch)
    yes, no = tmp_path / "yes", tmp_path / "no"
    reordered = 0
    for run in (1, 2):
        assert (yes / ("out.run%d.p" % run)).read_text() == (no / ("out.run%d.p" % run)).read_text()
        ours, plain = _trees(yes / ("out.run%d.t" % run)), _trees(no / ("out.run%d.t" % run))
        assert [_sorted(_shape(t)) for t in ours] == [_sorted(_shape(t)) for t in plain]
        reordered += sum(a != b for a, b in zip(ours, plain))
    assert reordered > 0
    for name in SUMT_FILES:
        assert (yes / name).read_text() == (no / name).read_text(), name


def test_mrbayes_sumt_reads_ordered_files_the_same(mb_double, tmp_path, monkeypatch):
    """MrBayes' own sumt gives the same files for our ordertaxa=yes and =no .t files."""
    for order in ("yes", "no"):
        _run_ours(tmp_path / order, order, monkeypatch)
        (tmp_path / order / "s.nex").write_text("#NEXUS\nbegin mrbayes;\n  set autoclose=yes nowarn=yes;\n"
                                               "  execute primates.nex;\n  sumt filename=out;\nend;\n")
        done = subprocess.run([str(mb_double), "s.nex"], cwd=tmp_path / order, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-2000:]
    for name in SUMT_FILES:
        assert (tmp_path / "yes" / name).read_text() == (tmp_path / "no" / name).read_text(), name
