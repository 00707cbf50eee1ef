"""sump and sumt on MrBayes' reference runs: files byte for byte, screen tables like MrBayes."""
import shutil
import types

import pytest

from mbgpu.errors import InputFileError
from mbgpu.output.tfile import TFileWriter, read_tfile
from mbgpu.splits import nested_splits, split_string, tree_splits
from mbgpu.summary import run_sump, run_sumt

REF = "mrbayes/reference_runs/"


class _Console:
    def __init__(self):
        self.lines = []

    def print(self, s=""):
        self.lines.append(s)


def _copy(shared_data, tmp_path, folder, ext):
    for f in (shared_data / REF / folder).iterdir():
        if f.name.endswith(ext):
            shutil.copy(f, tmp_path / f.name)


@pytest.mark.parametrize("folder,stem,nruns,stamp", [("primates_gtrig_20k", "primates.nex", 2, "6580315779"),
                                                     ("sim12_hky_g4", "sim12_hky_g4", 4, "6561469269")])
def test_sump_writes_mrbayes_pstat_and_lstat(shared_data, tmp_path, folder, stem, nruns, stamp):
    """As in MrBayes' session that ran the mcmc (whose stamp heads the files)."""
    _copy(shared_data, tmp_path, folder, ".p")
    con = _Console()
    s = types.SimpleNamespace(sump={"Nruns": nruns, "Filename": str(tmp_path / stem)}, options={}, mcmc={},
                              stamp=stamp)
    run_sump(s, con)
    for ext in ("pstat", "lstat"):
        assert (tmp_path / (stem + "." + ext)).read_text() == (shared_data / REF / folder / (stem + "." + ext)).read_text()
    if folder.startswith("primates"):
        log = (shared_data / REF / folder / "screen.log").read_text().splitlines()
        table = [l[3:] for l in log if l.startswith("      TL ") or l.startswith("      pinvar ")]
        assert all(t in con.lines for t in table) and len(table) == 2
        assert "   TOTAL    -5720.21         -5749.38" in con.lines


def test_sumt_writes_mrbayes_files(shared_data, tmp_path):
    _copy(shared_data, tmp_path, "primates_gtrig_20k", ".t")
    s = types.SimpleNamespace(sumt={"Nruns": 2, "Filename": str(tmp_path / "primates.nex")}, options={}, mcmc={},
                              stamp="6580315779")
    con = _Console()
    res = run_sumt(s, con)
    ref = shared_data / REF / "primates_gtrig_20k"
    for ext in ("parts", "tstat", "vstat", "con.tre"):
        assert (tmp_path / ("primates.nex." + ext)).read_text() == (ref / ("primates.nex." + ext)).read_text()
    # tree order among ties and each tree's child order as MrBayes packs and rebuilds topologies
    assert (tmp_path / "primates.nex.trprobs").read_text() == (ref / "primates.nex.trprobs").read_text()
    assert res["asdsf"] == 0.0
    assert "       Maximum PSRF for parameter values = 1.019" in con.lines


def test_tfile_round_trip_and_splits(tmp_path):
    from mbgpu.tree import Tree
    t = Tree(5, [7, 5, 5, 6, 6, -1, 7, 5], [0.1, 0.2, 0.3, 0.4, 0.5, 0.0, 0.6, 0.7])
    path = tmp_path / "x.t"
    with open(path, "w") as fh:
        w = TFileWriter(fh, 42, ["a", "b", "c", "d", "e"])
        from mbgpu.output.tfile import newick_of
        w.tree(0, newick_of(t))
        w.close()
    text = path.read_text()
    assert text.startswith("#NEXUS\n[ID: 42]\n[Param: tree]\nbegin trees;\n   translate\n       1 a,\n")
    assert "tree gen.0 = [&U] (" in text and text.endswith("end;\n")
    back = read_tfile(str(path))
    assert back.taxa == ["a", "b", "c", "d", "e"]
    assert nested_splits(back.trees[0].topology, 5) == tree_splits(t)
    assert [split_string(s, 5) for s in tree_splits(t)] == ["...**", ".**.."] or len(tree_splits(t)) == 2


def test_missing_and_malformed_files(tmp_path):
    s = types.SimpleNamespace(sump={"Nruns": 2, "Filename": str(tmp_path / "none")}, options={}, mcmc={})
    with pytest.raises(InputFileError):
        run_sump(s, _Console())
    (tmp_path / "bad.t").write_text("#NEXUS\nbegin trees;\n tree gen.0 = [&U] (1,2,(3;\nend;\n")
    with pytest.raises(InputFileError):
        read_tfile(str(tmp_path / "bad.t"))


def _write_t(path, newicks, taxa):
    with open(path, "w") as fh:
        w = TFileWriter(fh, 7, taxa)
        for g, nw in enumerate(newicks):
            w.tree(g * 10, nw)
        w.close()


def test_sumt_one_key_per_clade_whatever_the_written_root(tmp_path):
    """Runs that write the same unrooted tree from different roots must count the clade once (a run that
    put taxon 1 inside a written clade once doubled every clade key and halved its probability)."""
    taxa = ["a", "b", "c", "d", "e", "f"]
    mb_form = "((2:0.1,3:0.1):0.1,(4:0.1,(5:0.1,6:0.1):0.1):0.1,1:0.1)"
    other_root = "(4:0.1,(5:0.1,6:0.1):0.1,((2:0.1,3:0.1):0.1,1:0.1):0.1)"
    _write_t(tmp_path / "x.run1.t", [mb_form] * 8, taxa)
    _write_t(tmp_path / "x.run2.t", [other_root] * 8, taxa)
    s = types.SimpleNamespace(sumt={"Nruns": 2, "Filename": str(tmp_path / "x")}, options={}, mcmc={})
    run_sumt(s, _Console())
    rows = (tmp_path / "x.parts").read_text().splitlines()[1:]
    pictures = [r.split("\t")[1] for r in rows]
    assert len(pictures) == len(set(pictures))
    tstat = [r for r in (tmp_path / "x.tstat").read_text().splitlines() if r[:1].isdigit()]
    assert [float(r.split()[2]) for r in tstat] == [1.0, 1.0, 1.0]


def test_newick_writes_the_outgroup_last_at_the_basal_node():
    from mbgpu.output.tfile import newick_of, parse_newick
    from mbgpu.tree import random_tree
    import numpy as np
    for seed in range(20):
        t = random_tree(9, np.random.default_rng(seed))
        text = newick_of(t, False, 4)
        assert text.endswith(",1:%.4f)" % t.brlen[0])
        _, edges = parse_newick(text, {str(i + 1): i for i in range(9)}, None)
        full = (1 << 9) - 1
        assert all(not (b & 1) for b, _ in edges if b not in (1, full))
        assert sorted(tree_splits(t)) == sorted(s for s in nested_splits(parse_newick(
            text, {str(i + 1): i for i in range(9)}, None)[0], 9))


def test_log_means_survive_a_wide_spread():
    """Samples thousands of log units apart (a run from a random start) overflowed Python's exp."""
    import math
    from mbgpu.summary.sump import log_means
    am, hm, ok = log_means([-40701.41, -38318.98])
    assert ok and math.isclose(am, -38318.98 - math.log(2), rel_tol=1e-12)
    assert math.isclose(hm, -40701.41 + math.log(2), rel_tol=1e-12)
