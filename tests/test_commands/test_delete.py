"""`delete` / `restore` against MrBayes 3.2.7a (mb-double): Gen-0 rows and the .t translate table, the
start tree pruned to the included taxa, the outgroup and constraints without the deleted taxa."""
import io
import re
from pathlib import Path

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.interpreter import Interpreter
from mbgpu.tree import Tree

from tests.test_mrbayes_gen0 import _strip_mrbayes, assert_same_gen0, run_both

DATA = Path(__file__).resolve().parents[1] / "data"


def _primates() -> str:
    return _strip_mrbayes((DATA / "primates.nex").read_text())


def _translate(tfile: Path) -> list[str]:
    text = tfile.read_text()
    return re.search(r"(?s)translate(.*?);", text).group(1).split()


@pytest.mark.parametrize("commands", [
    "delete 2 Pan;",
    "delete 2 Pan; restore Pan;",
    "delete 1;",                                     # the outgroup: MrBayes roots at the first included taxon
    "outgroup Pan; delete Pan;",
    "taxset ts = 2 4; delete ts;",
    "delete 2-4;",
    "delete 2 Pan; prset brlenspr=unconstrained:exp(10);",
    "delete 2 Pan; prset brlenspr=unconstrained:gammadir(2,0.5,1,1);",
    "constraint c1 = Homo_sapiens Pan; delete Pan; prset topologypr=constraints(c1);",   # now a single tip
], ids=["two", "restore", "outgroup-default", "outgroup-set", "taxset", "range", "exponential", "gammadir-aT-bT",
        "constraint-single-tip"])
def test_deleted_taxa_gen0_like_mrbayes(commands, mb_double, tmp_path, monkeypatch):
    """lnL, tree length and LnPr (MrBayes' gammadir constant counts the deleted taxa) to 1e-6."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _primates(), commands)
    assert_same_gen0(want, got)
    assert float(want[1]["TL"]) == pytest.approx(float(got[1]["TL"]), abs=1e-9)
    assert _translate(tmp_path / "mbgpu" / "out.t") == _translate(tmp_path / "mb" / "out.t")


def _run(tmp_path, commands: str) -> str:
    (tmp_path / "data.nex").write_text(_primates() + "\nbegin trees;\n tree t = ((Homo_sapiens,Pan),(Gorilla,"
                                       "Pongo),(Hylobates,(Macaca_fuscata,(M_mulatta,(M_fascicularis,(M_sylvanus,"
                                       "(Saimiri_sciureus,(Tarsius_syrichta,Lemur_catta))))))));\nend;\n")
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\n execute data.nex;\n %s\nend;\n" % commands)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "cmd.nex"))
    return out.getvalue()


@pytest.mark.parametrize("commands, message", [
    ("delete all;", "at least two included taxa, now there is none"),          # mb-double's words, all three
    ("delete 1-11;", "at least two included taxa, now there is only one"),
    ("delete 2-11;", "at least two included taxa, now there is only one"),
    ("delete Homo;", "'Homo' is neither a taxon"),
    ("delete;", "delete needs taxa"),
])
def test_delete_errors(commands, message, tmp_path):
    with pytest.raises(CommandError, match=message):
        _run(tmp_path, commands)


def test_constraints_are_checked_without_the_deleted_taxa(tmp_path):
    """Homo, Gorilla and Pongo are a clade of t only once Pan is deleted (MrBayes checks the start tree
    against the constraints over the included taxa, "Tree breaks constraint 'c1'" otherwise)."""
    with pytest.raises(CommandError, match="breaks constraint 'c1'"):
        _run(tmp_path, "constraint c1 = Homo_sapiens Gorilla Pongo; prset topologypr=constraints(c1); "
                       "startvals tau=t;")
    _run(tmp_path, "constraint c1 = Homo_sapiens Gorilla Pongo; prset topologypr=constraints(c1); delete Pan; "
                   "startvals tau=t;")


def test_gammadir_with_other_a_or_c_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotImplementedYet, match=r"gammadir\(1,0.1,1.5,1\) with deleted taxa"):
        _run(tmp_path, "delete 2; prset brlenspr=unconstrained:gammadir(1,0.1,1.5,1); mcmc ngen=1 nruns=1 "
                       "nchains=1 checkpoint=no;")


def test_keep_tips_joins_branches_and_renumbers():
    index = {c: i for i, c in enumerate("ABCDEF")}
    tree = Tree.from_newick("((A:1,B:2):3,(C:4,D:5):6,(E:7,F:8):9);", index)
    small = tree.keep_tips([0, 1, 2, 4])                    # D and F go: C and E hang on joined branches
    assert small.n_tips == 4
    assert small.total_length() == pytest.approx(tree.total_length() - 5 - 8)
    lengths = dict(zip(range(4), small.brlen[:4]))
    assert lengths[2] == pytest.approx(10.0) and lengths[3] == pytest.approx(16.0)
    assert small.splits() == {frozenset({2, 3})}
    both = tree.keep_tips([2, 3, 4, 5])                     # a whole cherry goes with its node
    assert both.total_length() == pytest.approx(tree.total_length() - 1 - 2 - 3)
    assert sorted(np.round(both.brlen[both.parent >= 0], 6)) == [4, 5, 7, 8, 15]


def test_hymfossil_runs_to_its_clock_prior(shared_data, mb_double, tmp_path, monkeypatch):
    """MrBayes' example: ctype, exclude, taxsets, constraints over `1-.`, delete, 45 tip and 2 node
    calibrations, its fossilized birth-death igr clock: every command is taken (its `mcmcp` too), the clock
    model is MrBayes' (the .p header mb-double writes for it), and `mcmc` runs it with that header."""
    import subprocess

    from mbgpu.clock.model import clock_models
    from mbgpu.output.paramnames import clock_pfile_header
    from mbgpu.parameters import free_parameters

    monkeypatch.chdir(tmp_path)
    it = Interpreter(Console(io.StringIO()))
    it.run_file(str(shared_data / "mrbayes" / "hymfossil.nex"))
    (m,) = clock_models(it.settings)
    assert (m.tree_prior, m.clock_var, m.sample_strat, m.sample_prob) == ("fossilization", "igr", "diversity", 0.0005)
    assert len(m.tip_calibrations) == 45 and [c.name for c in m.node_calibrations] == ["root", "HolometabolaWithFossils"]
    text = (shared_data / "mrbayes" / "hymfossil.nex").read_text()
    run = re.sub(r"\tmcmcp nruns=4[^\n]*", "\tmcmc nruns=1 nchains=1 ngen=1 samplefreq=1 printfreq=1 checkpoint=no "
                 "mcmcdiagn=no filename=x;", text)
    (tmp_path / "h.nex").write_text(run)
    subprocess.run([str(mb_double), "h.nex"], cwd=tmp_path, capture_output=True, timeout=300)
    header = (tmp_path / "x.p").read_text().splitlines()[1].split("\t")[3:]
    assert clock_pfile_header(it.settings, free_parameters(it.settings), [m]) == header
    ours = tmp_path / "ours"                   # FBD + igr runs (session 43): one generation, MrBayes' header
    ours.mkdir()
    (ours / "h.nex").write_text(run)
    monkeypatch.chdir(ours)
    Interpreter(Console(io.StringIO())).run_file(str(ours / "h.nex"))
    assert (ours / "x.p").read_text().splitlines()[1] == (tmp_path / "x.p").read_text().splitlines()[1]


@pytest.mark.parametrize("commands", [
    "constraint c1 = Homo_sapiens Pan Gorilla; constraint c2 partial = Homo_sapiens Pan : Lemur_catta "
    "Tarsius_syrichta; constraint c3 negative = M_mulatta M_sylvanus; outgroup Pongo; delete 2;",
    "",
], ids=["constraints-deleted-outgroup", "plain"])
def test_taxastat_like_mrbayes(commands, mb_double, tmp_path):
    """MrBayes' DoTaxaStat table line for line: inclusion, each constraint's members, the outgroup arrow."""
    import subprocess
    (tmp_path / "data.nex").write_text(_primates())
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes quitonerror=yes;\n"
                                      " execute data.nex;\n %s\n taxastat;\nend;\n" % commands)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "cmd.nex"))

    def table(text: str) -> list[str]:
        lines = text.splitlines()
        first = next(i for i, line in enumerate(lines) if "Showing taxon status" in line)
        last = next(i for i, line in enumerate(lines) if "Arrow indicates current outgroup" in line)
        return lines[first:last + 1]
    assert table(out.getvalue()) == table(done.stdout)
