"""`sumt ntrees=N` on the per-tree files MrBayes 3.2.7a writes for unlinked topologies or branch lengths
(`NAME.tree<k>.run<r>.t`): MrBayes runs a short partitioned analysis, then MrBayes' and our sumt, each in
a fresh session, summarize the same files; every output file must be byte for byte MrBayes', and the
screen too from the first "Summarizing trees" on (MrBayes' 3-space spacer and its "Setting sumt ..."
echoes cut, trailing blanks ignored)."""
import subprocess

import pytest

from mbgpu.errors import InputFileError
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

_CODONS = (" charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3;\n"
           " partition by_codon = 3: p1, p2, p3; set partition=by_codon;\n")
_MCMC = (" set seed=3 swapseed=3;\n execute primates.nex;\n" + _CODONS + " %s\n"
         " mcmc ngen=2000 samplefreq=10 nruns=%d nchains=1 filename=t1 printfreq=1000 diagnfreq=1000;")

CASES = {   # name: (unlink command, nruns, sumt commands, each run in a fresh session)
    "topologies": ("unlink topology=(all);", 2,
                   ("sumt filename=t1 ntrees=3;", "sumt filename=t1.tree2 outputname=one;")),
    "one_run": ("unlink topology=(all) brlens=(all);", 1,
                ("sumt filename=t1 nruns=1 ntrees=3 outputname=xo savebrparams=yes;",)),
    "brlens_only": ("unlink brlens=(all);", 2, ("sumt filename=t1 ntrees=3 burnin=20 relburnin=no;",)),
    "three_runs": ("unlink topology=(all);", 3, ("sumt filename=t1 nruns=3 ntrees=2 conformat=simple;",)),
}


def _screen(text: str, mrbayes: bool) -> list[str]:
    """The sumt part of a screen: from the first 'Summarizing trees' to the end of the block."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Summarizing trees" in ln)
    out = []
    for ln in lines[start:]:
        if mrbayes:
            if ln.startswith("   Exiting mrbayes block"):
                break
            if ln.strip().startswith("Setting sumt"):
                continue
            ln = ln[3:] if ln.startswith("   ") else ln
        out.append(ln.rstrip())
    while out and not out[-1]:
        out.pop()
    return out


def _runs(mb_double, folder, case: str):
    """MrBayes' .t files of the case's analysis, in `folder`."""
    unlink, nruns, _ = CASES[case]
    stage(folder, TEST_DATA / "primates.nex")
    run_mb(mb_double, folder, _MCMC % (unlink, nruns), "run.nex")
    for extra in folder.glob("t1.*"):
        if not extra.name.endswith(".t"):
            extra.unlink()
    return folder


def _outputs(folder) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.endswith((".t", ".nex"))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ntrees_matches_mrbayes(tmp_path, monkeypatch, mb_double, case):
    theirs = _runs(mb_double, tmp_path / "mb", case)
    ours = stage(tmp_path / "us", TEST_DATA / "primates.nex")
    for t in theirs.glob("*.t"):
        (ours / t.name).write_bytes(t.read_bytes())
    screens = []
    for command in CASES[case][2]:
        block = " execute primates.nex;\n " + command
        screen_mb = run_mb(mb_double, theirs, block)
        screens.append(run_ours(ours, block, monkeypatch))
        assert _screen(screens[-1], False) == _screen(screen_mb, True), command
    made = _outputs(theirs)
    assert made == _outputs(ours) and len(made) >= 10
    for name in sorted(made):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name
    if case == "topologies":
        assert "one.vstat" in made and "length{2}[1]\t" in (ours / "one.vstat").read_text()
        assert "   Results for tree number 3" in screens[0] and "Examining first file for tree 2 ..." in screens[0]
    if case == "brlens_only":      # a linked topology: every file is headed [Param: tree{1}]
        assert all("length{1}[1]\t" in (ours / ("t1.tree%d.vstat" % k)).read_text() for k in (1, 2, 3))


def _mrbayes_fails(mb_double, folder, command: str) -> str:
    (folder / "fail.nex").write_text("#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes;\n execute primates.nex;\n"
                                     " %s\nend;\n" % command)
    r = subprocess.run([str(mb_double), "fail.nex"], cwd=folder, capture_output=True, text=True, timeout=600)
    assert r.returncode != 0
    return r.stdout


def test_missing_tree_file_stops_after_the_trees_before_it(tmp_path, monkeypatch, mb_double):
    """ntrees=4 with three trees: MrBayes writes trees 1-3, then fails on t1.tree4.run1.t; so do we. MrBayes
    keeps `.t` in a file name (`filename=t1.t` reads t1.t.tree1.run1.t)."""
    theirs = _runs(mb_double, tmp_path / "mb", "topologies")
    ours = stage(tmp_path / "us", TEST_DATA / "primates.nex")
    for t in theirs.glob("*.t"):
        (ours / t.name).write_bytes(t.read_bytes())
    for command, missing in (("sumt filename=t1 ntrees=4;", "t1.tree4.run1.t"),
                             ("sumt filename=t1.t ntrees=2;", "t1.t.tree1.run1.t")):
        assert 'Could not open file "%s"' % missing in _mrbayes_fails(mb_double, theirs, command)
        with pytest.raises(InputFileError) as e:
            run_ours(ours, " " + command, monkeypatch)
        assert missing in e.value.one_line()
    made = _outputs(theirs) - {"fail.nex"}
    assert made == _outputs(ours) and len(made) == 15
    for name in made:
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


def test_tree_files_and_param_names_without_mrbayes(tmp_path):
    """Hand-written files of two trees (headers tree{1}, tree{2}) and one plain run: names and screen."""
    import types

    from mbgpu.output.tfile import TFileWriter, read_tfile
    from mbgpu.summary import run_sumt
    from mbgpu.summary.sumt_trees import tree_files

    taxa = ["a", "b", "c", "d", "e"]
    trees = ["((2:0.1,3:0.2):0.05,(4:0.3,5:0.4):0.06,1:0.5)", "((2:0.1,(3:0.2,4:0.3):0.07):0.08,5:0.4,1:0.5)"]
    for k in (1, 2):
        for run in (1, 2):
            with open(tmp_path / ("x.tree%d.run%d.t" % (k, run)), "w") as fh:
                w = TFileWriter(fh, 7, taxa, param="tree{%d}" % k)
                for g in range(8):
                    w.tree(10 * g, trees[(g + k + run) % 2])
                w.close()
    assert read_tfile(str(tmp_path / "x.tree2.run1.t")).param == "tree{2}"
    assert [t.out for t in tree_files("x", "o", 2)] == ["o.tree1", "o.tree2"] and tree_files("x", "o", 1)[0].out == "o"

    class Console:
        def __init__(self):
            self.lines = []

        def print(self, s=""):
            self.lines.append(s)

    s = types.SimpleNamespace(sumt={"Nruns": 2, "Ntrees": 2, "Filename": str(tmp_path / "x")}, options={}, mcmc={})
    con = Console()
    res = run_sumt(s, con)
    assert len(res["trees"]) == 2 and res is not res["trees"][0]
    assert (tmp_path / "x.tree2.vstat").read_text().splitlines()[1].startswith("length{2}[1]\t")
    assert not (tmp_path / "x.vstat").exists()
    screen = [ln.rstrip() for ln in con.lines]
    assert screen.count("   Results for tree number 2") == 1 and screen.count("   List of taxa in bipartitions:") == 1
    assert '      (saved to file "%s.tstat"):' % (tmp_path / "x") in screen
