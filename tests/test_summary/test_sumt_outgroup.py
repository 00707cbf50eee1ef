"""sumt after `outgroup` (and after `delete`, which prunes the trees read: mbgpu.summary.prune) against
MrBayes 3.2.7a on the same .t files: splits keyed and printed by their side without the outgroup, the consensus (.con.tre, figtree and simple, and its drawings) rooted there,
and MrBayes' quirk of rooting the first sampled tree of run 1 where the last sumt, `delete`/`restore`
or the start of the session left its outgroup (mbgpu.summary.outgroup): every file byte for byte and the
screen of each sumt line for line."""
import re
import shutil

import pytest

from mbgpu.summary.outgroup import hung_edges
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

_MCMC = "mcmc ngen=2000 samplefreq=10 printfreq=1000 diagnfreq=1000"


@pytest.fixture(scope="module")
def trees(tmp_path_factory, mb_double):
    """MrBayes' own .t files: primates with two runs (r) and one (s), cynmix (32 taxa) with two (c)."""
    folder = stage(tmp_path_factory.mktemp("mcmc"), TEST_DATA / "primates.nex", TEST_DATA / "cynmix.nex")
    run_mb(mb_double, folder, " execute primates.nex;\n set seed=5 swapseed=6;\n outgroup 3; %s filename=r;\n"
           " %s nruns=1 filename=s;\n execute cynmix.nex;\n set seed=11 swapseed=12;\n %s nruns=2 filename=c;"
           % (_MCMC, _MCMC, _MCMC))
    return folder


def _sumt_screens(text: str, theirs: bool) -> list[list[str]]:
    """Each sumt's screen, 'Summarizing trees' to its last credible-set line, MrBayes' spacer cut."""
    out, cur = [], None
    for ln in text.split("\n"):
        if "Summarizing trees" in ln:
            cur = []
            out.append(cur)
        if cur is not None:
            cur.append(ln[3:] if theirs and not (len(ln) == 83 and not ln.strip()) else ln)
            if "99 % credible set" in ln:
                cur = None
    return out


def _compare(tmp_path, monkeypatch, mb, block: str, stems, data=("primates.nex",), folder=None):
    """`block` through MrBayes and mbgpu on copies of the .t files of `stems`: the same files, the same
    screens; returns mbgpu's folder."""
    sides = {}
    for side in ("mb", "us"):
        sides[side] = stage(tmp_path / side, *[TEST_DATA / d for d in data])
        for path in folder.iterdir():
            if path.suffix == ".t" and path.name.split(".")[0] in stems:
                shutil.copy(path, sides[side] / path.name)
    theirs = _sumt_screens(run_mb(mb, sides["mb"], block), True)
    ours = _sumt_screens(run_ours(sides["us"], block, monkeypatch), False)
    assert len(theirs) == len(ours) == block.count("sumt ")
    for a, b in zip(ours, theirs):
        assert a == b
    kinds = (".parts", ".tstat", ".trprobs", ".brparams", ".vstat")
    made = sorted(p.name for p in sides["mb"].iterdir() if p.suffix in kinds or p.name.endswith(".con.tre"))
    assert made and made == sorted(p.name for p in sides["us"].iterdir() if p.name in made)
    for name in made:
        assert (sides["us"] / name).read_text() == (sides["mb"] / name).read_text(), name
    return sides["us"]


_CASES = {   # name: (block, the .t files' stems, data files)
    "number": (" execute primates.nex;\n outgroup 3; sumt filename=r;", "r"),
    "name-allcompat-simple": (" execute primates.nex;\n outgroup Gorilla; sumt filename=r contype=allcompat "
                              "conformat=simple;", "r"),
    "one-run-allcompat": (" execute primates.nex;\n outgroup 7; sumt filename=s nruns=1 contype=allcompat;", "s"),
    "one-run-last-taxon-simple": (" execute primates.nex;\n outgroup Saimiri_sciureus; sumt filename=s nruns=1 "
                                  "conformat=simple;", "s"),
    "second-sumt": (" execute primates.nex;\n outgroup 3; sumt filename=r outputname=a;\n outgroup 5;"
                    " sumt filename=r outputname=b contype=allcompat;", "r"),
    "back-to-taxon-1": (" execute primates.nex;\n outgroup 3; sumt filename=r outputname=a;\n outgroup 1;"
                        " sumt filename=r outputname=b;", "r"),
    "execute-resets": (" execute primates.nex;\n outgroup 3; sumt filename=r outputname=a;\n execute primates.nex;\n"
                       " outgroup 3; sumt filename=r outputname=b;", "r"),
    "brparams-minpartfreq": (" execute primates.nex;\n outgroup 6; sumt filename=r savebrparams=yes minpartfreq=0.02"
                             " contype=allcompat;", "r"),
    "delete-restore": (" execute primates.nex;\n outgroup Pongo; delete 12; restore 12; outgroup 5;"
                       " sumt filename=r;", "r"),
    "prune-one": (" execute primates.nex;\n delete 3; sumt filename=r;", "r"),
    "prune-four": (" execute primates.nex;\n delete 3 5 7 11; sumt filename=r outputname=a;\n restore all;"
                   " sumt filename=r outputname=b;", "r"),
    "prune-eight-wrapped-names": (" execute primates.nex;\n delete 2-9; sumt filename=s nruns=1;", "s"),
    "prune-outgroup": (" execute primates.nex;\n outgroup 4; delete 1 3 4 7 9 11; sumt filename=r contype=allcompat;",
                       "r"),
    "prune-root-neighbours": (" execute primates.nex;\n delete 1 12; sumt filename=r savebrparams=yes;", "r"),
    "prune-basal-pair": (" execute primates.nex;\n delete 1 2; sumt filename=r;", "r"),
    "prune-hung-before": (" execute primates.nex;\n outgroup 5; delete 1; sumt filename=r outputname=a;\n outgroup 12;"
                          " delete 2; sumt filename=r outputname=b contype=allcompat;", "r"),
    "prune-cynmix": (" execute cynmix.nex;\n delete 2 5-9 30; sumt filename=c;", "c", ("cynmix.nex",)),
    "cynmix": (" execute cynmix.nex;\n outgroup 20; sumt filename=c outputname=a contype=allcompat;\n"
               " sumt filename=c outputname=b;", "c", ("cynmix.nex",)),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_sumt_at_an_outgroup_matches_mrbayes(tmp_path, monkeypatch, mb, trees, case):
    block, stems, *data = _CASES[case]
    _compare(tmp_path, monkeypatch, mb, block, stems, *(data or [("primates.nex",)]), folder=trees)


def test_first_sumt_counts_its_first_tree_apart(tmp_path, monkeypatch, mb, trees):
    """The quirk on MrBayes' run (outgroup Homo_sapiens, 302 trees sampled): the splits that separate taxon 1
    from the outgroup show 301 in the session's first sumt, 302 in the next."""
    us = _compare(tmp_path, monkeypatch, mb, " execute primates.nex;\n outgroup 3; sumt filename=r outputname=a;\n"
                  " sumt filename=r outputname=b;", "r", folder=trees)
    counts = [[int(row.split("\t")[2]) for row in (us / f).read_text().splitlines()[2:]] for f in ("a.tstat", "b.tstat")]
    assert 301 in counts[0] and 301 not in counts[1] and max(counts[1]) == 302


def test_sumt_of_mbgpus_own_run_at_its_outgroup(tmp_path, monkeypatch, mb):
    """mbgpu's mcmc writes each tree with the outgroup last; its sumt in the same session (the session's
    first) gives MrBayes' files and screen for those .t files, but for the [ID] line."""
    ours = stage(tmp_path / "us", TEST_DATA / "primates.nex")
    screen = run_ours(ours, " execute primates.nex;\n set seed=3 swapseed=4;\n outgroup Pan; mcmc ngen=600 "
                      "samplefreq=10 printfreq=300 diagnfreq=300 filename=g;\n sumt;", monkeypatch)
    written = [ln for ln in (ours / "g.run1.t").read_text().splitlines() if ln.lstrip().startswith("tree ")]
    assert written and all(re.search(r",4:[^,()]+\);$", ln) for ln in written)
    theirs = stage(tmp_path / "mb", TEST_DATA / "primates.nex")
    for run in (1, 2):
        shutil.copy(ours / ("g.run%d.t" % run), theirs)
    mine = _sumt_screens(screen, False)
    assert mine == _sumt_screens(run_mb(mb, theirs, " execute primates.nex;\n outgroup Pan; sumt filename=g;"), True)
    for ext in ("parts", "tstat", "vstat", "con.tre", "trprobs"):
        a, b = ((f / ("g." + ext)).read_text().splitlines() for f in (ours, theirs))
        assert [ln for ln in a if not ln.startswith("[ID:")] == [ln for ln in b if not ln.startswith("[ID:")], ext


def test_root_moves_as_mrbayes_moves_it():
    """MovePolyCalculationRoot on ((1,2),3,(4,5)): to taxon 4, the old root becomes the last child of the
    node below it (with that node's branch), and 4 the root's last child; to taxon 3, only 3 moves last."""
    topo = ((0, 1), 2, (3, 4))
    edges = [(1, .1), (2, .2), (3, .3), (4, .4), (8, .8), (16, .16), (24, .24), (31, float("nan"))]
    assert hung_edges(topo, edges, 3) == [(16, .16), (1, .1), (2, .2), (3, .3), (4, .4), (7, .24), (8, .8), (31, 0.0)]
    got = hung_edges(topo, edges, 2)
    assert got[:-1] == [(1, .1), (2, .2), (3, .3), (8, .8), (16, .16), (24, .24), (4, .4)] and got[-1][0] == 31
