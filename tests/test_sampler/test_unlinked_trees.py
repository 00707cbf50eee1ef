"""`unlink topology=(...)`: one tree per division (or group), checked against MrBayes 3.2.7a (mb-double).

The state mbgpu reaches after some generations (three trees with varied branch lengths) is given to
MrBayes as its start state (`startvals tau{k}= V{k}=`): MrBayes' Gen-0 LnL and LnPr must equal mbgpu's
row. The files' names and headers, the move list and the per-topology diagnostics are MrBayes'; a
continuation from a checkpoint is byte-identical; what is not supported yet is refused. The runs take
the compiled core (mbgpu.core; `core_use` checks it took them), some the interpreted step as well.
"""
import io
import re
import subprocess

import numpy as np
import pytest
from scipy import stats

import mbgpu.sampler.batch_step as batch_step
from mbgpu.console import Console
from mbgpu.errors import MbgpuError
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA
from tests.test_checkpoint.common import block, run_text, same_outputs

CODON = ("charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
         "partition by_codon = 3: p1, p2, p3; set partition=by_codon;")
UNLINKED = CODON + " unlink topology=(all);"
BRLENS = CODON + " unlink brlens=(all);"                       # one Tau{all}, V{1} V{2} V{3}: MultNNI
PARTIAL = CODON + " unlink brlens=(all); link brlens=(1,3);"    # one Tau{all}, V{1,3} V{2}


@pytest.fixture
def core_use(monkeypatch) -> list:
    """The reasons the compiled core gave for the chains of this test's runs ('' where it stepped them):
    one entry per run started."""
    seen, real = [], batch_step.core_for

    def spy(chains):
        core = real(chains)
        if core is None or not seen:
            seen.append(chains[0].core_refused)
        return core

    monkeypatch.setattr(batch_step, "core_for", spy)
    return seen


def _core_took(seen: list) -> None:
    """The compiled core stepped every run's chains."""
    assert seen and set(seen) == {""}, seen


def _mbgpu(folder, text: str, monkeypatch) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / "cmd.nex").write_text(text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "cmd.nex"))
    return out.getvalue()


def _mb(mb_double, folder, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cmd.nex").write_text(text)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    return done.stdout


def _last_tree(tfile, taxa: list[str]) -> str:
    """The last tree of a .t file with taxon names for the translate numbers."""
    line = [ln for ln in tfile.read_text().splitlines() if ln.strip().startswith("tree gen.")][-1]
    newick = line.split("=", 1)[1].replace("[&U]", "").strip()
    return re.sub(r"(?<=[(,])(\d+)(?=:)", lambda m: taxa[int(m.group(1)) - 1], newick)


def _row(pfile, gen: int) -> dict:
    lines = pfile.read_text().splitlines()
    header = lines[1].split("\t")
    row = next(ln.split("\t") for ln in lines[2:] if ln.split("\t")[0] == str(gen))
    return dict(zip(header, row))


@pytest.mark.parametrize("backend, extra", [("cpu", ""), ("cpu-interpreted", ""),
                                            pytest.param("gpu", "", marks=pytest.mark.gpu), ("cpu", " delete 3 8;")],
                         ids=["cpu", "cpu-interpreted", "gpu", "deleted-taxa"])
def test_three_trees_score_as_mrbayes_scores_them(backend, extra, mb_double, tmp_path, monkeypatch, core_use):
    """After 300 generations mbgpu's three trees (varied lengths) and its LnL and LnPr, on the CPU and on
    a GPU (the compiled core), also with deleted taxa, and on the interpreted step: MrBayes started on
    those trees computes the same LnL and LnPr (1e-6), and writes the same .p header."""
    interpreted = backend == "cpu-interpreted"
    if interpreted:
        monkeypatch.setattr(batch_step, "core_for", lambda chains: None)
    backend = backend.split("-")[0]
    setting = "set seed=11 swapseed=3 precision=15 scientific=no; execute %s;\n %s prset statefreqpr=fixed(equal);%s" % (
        TEST_DATA / "primates.nex", UNLINKED, extra)
    _mbgpu(tmp_path / "g", "#NEXUS\nbegin mrbayes; set backend=%s; %s mcmc ngen=300 samplefreq=100 "
           "printfreq=100 nruns=1 "
           "nchains=1 filename=u; end;\n" % (backend, setting), monkeypatch)
    taxa = [ln.split()[0] for ln in (TEST_DATA / "primates.nex").read_text().split("matrix")[1].splitlines()[1:13]]
    if "delete" in extra:
        taxa = [t for k, t in enumerate(taxa) if k not in (2, 7)]
    trees = [_last_tree(tmp_path / "g" / ("u.tree%d.t" % k), taxa) for k in (1, 2, 3)]
    assert len(set(trees)) == 3
    got = _row(tmp_path / "g" / "u.p", 300)
    tree_block = "begin trees;\n" + "".join("  tree t%d = %s;\n" % (k, t.rstrip(";")) for k, t in enumerate(trees, 1))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    _mb(mb_double, tmp_path / "m", "#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%send;\nbegin mrbayes; %s "
        "startvals %s; mcmc ngen=1 samplefreq=1 nruns=1 nchains=1 mcmcdiagn=no checkpoint=no filename=u; end;\n"
        % (tree_block, setting.replace("execute %s;" % (TEST_DATA / "primates.nex"), ""),
           " ".join("tau{%d}=t%d V{%d}=t%d" % (k, k, k, k) for k in (1, 2, 3))))
    want = _row(tmp_path / "m" / "u.p", 0)
    assert list(want) == list(got)
    for col in ["LnL", "LnPr", "TL{1}", "TL{2}", "TL{3}"] + [c for c in want if c.startswith("m{")]:
        assert abs(float(got[col]) - float(want[col])) < 1e-6, (col, got[col], want[col])
    assert core_use == ([] if interpreted else [""])       # the core stepped the chains (or was kept out)


@pytest.mark.parametrize("model, names", [(BRLENS, ("V{1}", "V{2}", "V{3}")), (PARTIAL, ("V{1,3}", "V{2}"))],
                         ids=["brlens", "partial"])
@pytest.mark.parametrize("path", ["core", "interpreted", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_trees_sharing_a_topology_score_as_mrbayes_scores_them(model, names, path, mb_double, tmp_path, monkeypatch,
                                                               core_use):
    """`unlink brlens` inside the linked topology: after 300 generations (MultNNI and each tree's
    branch-length moves, on the compiled core (CPU, GPU) or the interpreted step) mbgpu's trees share one topology
    with lengths of their own; MrBayes started on them (`startvals tau=T1 V{1}=T1 V{2}=T2 ...`, which it
    refuses for differing topologies) computes the same LnL and LnPr (1e-6) and TL of each tree."""
    if path == "interpreted":
        monkeypatch.setattr(batch_step, "core_for", lambda chains: None)
    setting = "set seed=11 swapseed=3 precision=15 scientific=no; execute %s;\n %s prset statefreqpr=fixed(equal);" % (
        TEST_DATA / "primates.nex", model)
    _mbgpu(tmp_path / "g", "#NEXUS\nbegin mrbayes; set backend=%s; %s mcmc ngen=300 samplefreq=100 printfreq=100 "
           "nruns=1 nchains=1 filename=u; end;\n" % ("gpu" if path == "gpu" else "cpu", setting), monkeypatch)
    taxa = [ln.split()[0] for ln in (TEST_DATA / "primates.nex").read_text().split("matrix")[1].splitlines()[1:13]]
    trees = [_last_tree(tmp_path / "g" / ("u.tree%d.t" % k), taxa) for k in range(1, len(names) + 1)]
    assert len(set(trees)) == len(names)
    numbered = [_last_tree(tmp_path / "g" / ("u.tree%d.t" % k), [str(i) for i in range(1, 13)])
                for k in range(1, len(names) + 1)]
    assert all(_clades(t) == _clades(numbered[0]) for t in numbered)
    got = _row(tmp_path / "g" / "u.p", 300)
    tree_block = "begin trees;\n" + "".join("  tree t%d = %s;\n" % (k, t.rstrip(";")) for k, t in enumerate(trees, 1))
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    _mb(mb_double, tmp_path / "m", "#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%send;\nbegin mrbayes; %s "
        "startvals tau=t1 %s; mcmc ngen=1 samplefreq=1 nruns=1 nchains=1 mcmcdiagn=no checkpoint=no filename=u; end;\n"
        % (tree_block, setting.replace("execute %s;" % (TEST_DATA / "primates.nex"), ""),
           " ".join("%s=t%d" % (v, k) for k, v in enumerate(names, 1))))
    want = _row(tmp_path / "m" / "u.p", 0)
    assert list(want) == list(got)
    for col in ["LnL", "LnPr"] + ["TL" + v[1:] for v in names]:
        assert abs(float(got[col]) - float(want[col])) < 1e-6, (col, got[col], want[col])
    assert core_use == ([] if path == "interpreted" else [""])


MCMC = "ngen=200 samplefreq=100 printfreq=100 diagnfreq=100 nruns=2 nchains=2 filename=t1"


@pytest.mark.parametrize("model", [UNLINKED, CODON, BRLENS, PARTIAL], ids=["unlinked", "linked", "brlens", "partial"])
def test_files_moves_and_diagnostics_are_mrbayes(model, mb_double, tmp_path, monkeypatch, core_use):
    """Tree files per tree and run, their headers ([Param: tree{k}]; one linked tree of partitioned data:
    tree{all}; trees sharing a topology: the first's, MrBayes' quirk), the .p and .mcmc headers, the move
    list (MultNNI for trees sharing a topology), the model summary's parameters and one ASDSF line per
    topology, as mb-double writes them for the same commands."""
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute primates.nex;\n%s\n"
            "showmodel;\nmcmc %s;\nend;\n" % (model, MCMC))
    for side in ("g", "m"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    screen = _mbgpu(tmp_path / "g", text, monkeypatch)
    mb_screen = _mb(mb_double, tmp_path / "m", text)
    names = sorted(p.name for p in (tmp_path / "m").iterdir() if p.name.startswith("t1."))
    assert names == sorted(p.name for p in (tmp_path / "g").iterdir() if p.name.startswith("t1.") and
                           not p.name.endswith(".ckp.h5"))
    assert {UNLINKED: "t1.tree3.run2.t", BRLENS: "t1.tree3.run2.t", PARTIAL: "t1.tree2.run2.t"}.get(
        model, "t1.run2.t") in names
    for name in names:
        want = (tmp_path / "m" / name).read_text().splitlines()
        got = (tmp_path / "g" / name).read_text().splitlines()
        first = 1 if name.endswith(".mcmc") else 2   # the line after [ID: ...] (.p: the header only)
        head = 6 if name.endswith(".mcmc") else 2 if name.endswith(".p") else 17
        assert got[first:head] == want[first:head], name
        assert len(got) == len(want), name

    def moves(s):
        return [ln.strip() for ln in s.split("following moves:")[1].split("\n\n")[0].splitlines()[1:]]

    assert moves(screen) == moves(mb_screen)

    def params(s):
        return [ln.strip() for ln in s.splitlines() if re.search(r"Parameter  =|Subparam|Partitions? +=", ln)]

    assert params(screen) == params(mb_screen)
    asdsf = re.compile(r"Average standard deviation of split frequencies( for topology \d)?: ")
    assert asdsf.findall(screen) == asdsf.findall(mb_screen)
    assert len(asdsf.findall(screen)) == (6 if model == UNLINKED else 2)
    _core_took(core_use)


@pytest.mark.parametrize("model", [UNLINKED, BRLENS], ids=["unlinked", "brlens"])
def test_continuation_is_byte_identical(model, tmp_path, monkeypatch, core_use):
    """A run continued from its checkpoint (every tree and every tree's split counts in it) writes the
    same files as a straight run."""
    mcmc = "nruns=2 nchains=2 samplefreq=10 printfreq=100 diagnfreq=40 tunefreq=20 filename=r"
    names = ["r.run1.p", "r.run2.p", "r.mcmc"] + ["r.tree%d.run%d.t" % (k, r) for k in (1, 2, 3) for r in (1, 2)]
    run_text(tmp_path / "ref", block(160, "checkfreq=30", model=model, mcmc=mcmc), monkeypatch)
    run_text(tmp_path / "cont", block(73, "checkfreq=30", model=model, mcmc=mcmc), monkeypatch, "a.nex")
    run_text(tmp_path / "cont", block(160, "checkfreq=30 append=yes", model=model, mcmc=mcmc), monkeypatch,
             "b.nex")
    assert same_outputs(tmp_path / "ref", tmp_path / "cont", names) == []
    _core_took(core_use)


def test_prior_of_each_tree_is_recovered(tmp_path, monkeypatch, core_use):
    """mcmc data=no: each tree's topology is uniform over the 3 unrooted trees of 4 taxa (independently
    of the other tree), and each tree length the Gamma(5, 10) of five Exponential(10) branches."""
    data = ("#NEXUS\nbegin data; dimensions ntax=4 nchar=8; format datatype=dna; matrix\n"
            "A ACGTACGT\nB ACGTACGA\nC ACGAACGT\nD TCGTACGT\n;\nend;\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "four.nex").write_text(data)
    _mbgpu(tmp_path / "d", "#NEXUS\nbegin mrbayes; set seed=2 swapseed=2; execute four.nex;\n charset a=1-4; "
           "charset b=5-8; partition p=2:a,b; set partition=p; unlink topology=(all); "
           "prset brlenspr=unconstrained:exp(10); mcmc data=no ngen=40000 "
           "samplefreq=10 printfreq=40000 nruns=1 nchains=1 filename=pr; end;\n", monkeypatch)
    rows = np.loadtxt(tmp_path / "d" / "pr.p", skiprows=2)[400:]     # burn-in: the chains start at TL 0.1
    header = (tmp_path / "d" / "pr.p").read_text().splitlines()[1].split("\t")
    for col in ("TL{1}", "TL{2}"):
        lengths = rows[:, header.index(col)]
        assert stats.kstest(lengths[::10], stats.gamma(5, scale=0.1).cdf).pvalue > 1e-3, col
    splits = []
    for k in (1, 2):
        trees = [ln for ln in (tmp_path / "d" / ("pr.tree%d.t" % k)).read_text().splitlines() if "gen." in ln][400:]
        splits.append([_quartet(t) for t in trees])
    pairs = np.array(splits).T
    n = len(pairs)
    for k in (0, 1):
        freq = np.bincount(pairs[:, k], minlength=3) / n
        assert np.all(np.abs(freq - 1 / 3) < 0.05), freq
    joint = np.bincount(pairs[:, 0] * 3 + pairs[:, 1], minlength=9) / n
    assert np.all(np.abs(joint - 1 / 9) < 0.04), joint
    assert core_use == [""]


def _quartet(line: str) -> int:
    """Which of the three unrooted 4-taxon trees a .t line holds: the taxon paired with taxon 1."""
    newick = re.sub(r":[0-9.e+-]+", "", line.split("=", 1)[1].replace("[&U]", "").strip().rstrip(";"))
    for partner in "234":
        if re.search(r"\((1,%s|%s,1)\)" % (partner, partner), newick):
            return int(partner) - 2
    inner = re.search(r"\((\d),(\d)\)", newick).groups()     # 1 at the root with the other cherry
    return int(({"2", "3", "4"} - set(inner)).pop()) - 2


@pytest.mark.parametrize("commands, says", [
    (BRLENS + " mcmc ngen=10 nperts=2;", "nperts with unlinked branch lengths in a linked topology"),
    (UNLINKED + " prset ratepr=dirichlet(2,2,2); mcmc ngen=10;", "rate multiplier of its own"),
])
def test_what_is_not_supported_yet_is_refused(commands, says, tmp_path, monkeypatch):
    text = "#NEXUS\nbegin mrbayes; execute %s; end;\nbegin mrbayes; %s end;\n" % (TEST_DATA / "primates.nex",
                                                                               commands.replace("begin mrbayes;", ""))
    with pytest.raises(MbgpuError, match="not supported yet") as err:
        _mbgpu(tmp_path / "x", text, monkeypatch)
    assert says in str(err.value)


TREES = ("begin trees;\n tree a = (1,(2,3),(4,(5,(6,(7,(8,(9,(10,(11,12)))))))));\n"
         " tree b = (1:0.1,(2:0.1,3:0.05):0.02,(4:0.1,(5:0.1,(6:0.3,(7:0.1,(8:0.1,(9:0.1,(10:0.1,(11:0.1,12:0.1):0.1)"
         ":0.1):0.1):0.1):0.1):0.1):0.1):0.1);\n tree c = ((1,2),3,(4,(5,(6,(7,(8,(9,(10,(11,12)))))))));\nend;\n")


def _startvals_file(folder, startvals: str, model: str = UNLINKED) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    return ("#NEXUS\nexecute primates.nex;\n%sbegin mrbayes;\nset autoclose=yes nowarn=yes quitonerror=yes;\n%s\n"
            "startvals %s;\nmcmc ngen=1 nruns=1 nchains=1 samplefreq=1 checkpoint=no filename=sv;\nend;\n"
            % (TREES, model, startvals))


def test_startvals_of_each_tree_like_mrbayes(mb_double, tmp_path, monkeypatch):
    """`startvals tau{1}=a tau{2}=b v{2}=b tau{3}=c`: MrBayes' Gen-0 LnL and LnPr (topologies with
    branches 0.02, and b's lengths on tree 2)."""
    text = _startvals_file(tmp_path / "m", "tau{1}=a tau{2}=b v{2}=b tau{3}=c")
    line = re.compile(r"Chain 1 -- (\S+) -- (\S+)")
    want = line.search(_mb(mb_double, tmp_path / "m", text)).groups()
    _startvals_file(tmp_path / "g", "")
    got = line.search(_mbgpu(tmp_path / "g", text, monkeypatch)).groups()
    assert got == want


@pytest.mark.parametrize("startvals", ["tau=a v{2}=b", "tau{all}=b v{1}=b v{3}=b"])
def test_startvals_of_trees_sharing_a_topology_like_mrbayes(startvals, mb_double, tmp_path, monkeypatch):
    """`unlink brlens` alone: one Tau (`tau=`, `tau{all}=`) and each V's lengths (b: a's topology with
    lengths of its own, taken by split; 0.02 where no V is given): MrBayes' Gen-0 LnL and LnPr."""
    text = _startvals_file(tmp_path / "m", startvals, BRLENS)
    line = re.compile(r"Chain 1 -- (\S+) -- (\S+)")
    want = line.search(_mb(mb_double, tmp_path / "m", text)).groups()
    _startvals_file(tmp_path / "g", "", BRLENS)
    got = line.search(_mbgpu(tmp_path / "g", text, monkeypatch)).groups()
    assert got == want


@pytest.mark.parametrize("startvals, says, model", [
    ("tau=a", "Several parameters matched the abbreviated name 'tau'", UNLINKED),
    ("tau{all}=a", "Could not find parameter 'tau{all}'", UNLINKED),
    ("v{2}=b", "Topology of user tree 'b' wrong in setting parameter 'V{2}'", UNLINKED),
    ("tau{2}=c v{2}=b", "Topology of user tree 'b' wrong in setting parameter 'V{2}'", UNLINKED),
    ("v=b", "Several parameters matched the abbreviated name 'v'", BRLENS),
    ("tau{1}=a", "Could not find parameter 'tau{1}'", BRLENS),
    ("v{3}=b", "Topology of user tree 'b' wrong in setting parameter 'V{3}'", BRLENS),
    ("tau=c v{3}=b", "Topology of user tree 'b' wrong in setting parameter 'V{3}'", BRLENS),
])
def test_startvals_errors_are_mrbayes(startvals, says, model, mb_double, tmp_path, monkeypatch):
    """The names MrBayes does not take with three trees (three topologies, or one with three V), and
    lengths whose topology is not the tree's."""
    text = _startvals_file(tmp_path / "m", startvals, model)
    (tmp_path / "m" / "cmd.nex").write_text(text)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / "m", capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and says.split(" '")[0] in done.stdout, done.stdout[-1500:]
    _startvals_file(tmp_path / "g", "")
    with pytest.raises(MbgpuError, match=re.escape(says)):
        _mbgpu(tmp_path / "g", text, monkeypatch)


def _clades(newick: str, n: int = 12) -> set:
    """The non-trivial splits of an unrooted newick tree of taxa 1..n, each as its side without taxon 1."""
    stack, out, full = [], set(), frozenset(range(1, n + 1))
    for tok in re.findall(r"\(|\)|\d+(?=:)", re.sub(r"\)[0-9.e+-]*:", "):", newick)):
        if tok == "(":
            stack.append(set())
        elif tok == ")":
            done = stack.pop()
            if stack:
                stack[-1] |= done
            side = frozenset(done) if 1 not in done else full - done
            if 1 < len(side) < n - 1:
                out.add(side)
        else:
            stack[-1].add(int(tok))
    return out


def _split_freqs(tfile, burnin: float = 0.25) -> dict:
    trees = [ln.split("=", 1)[1] for ln in tfile.read_text().splitlines() if ln.strip().startswith("tree gen.")]
    kept = trees[int(len(trees) * burnin):]
    counts: dict = {}
    for t in kept:
        for c in _clades(t):
            counts[c] = counts.get(c, 0) + 1
    return {c: k / len(kept) for c, k in counts.items()}


@pytest.mark.slow
@pytest.mark.parametrize("model", [UNLINKED, BRLENS], ids=["unlinked", "brlens"])
def test_posterior_of_each_tree_matches_mrbayes(model, mb, tmp_path, monkeypatch, core_use):
    """Each codon position's own tree (or branch lengths on the shared topology, moved by MultNNI), on the
    compiled core: the split frequencies MrBayes samples, within 0.1 (two runs of two chains, the first
    quarter of the samples left out; pooled over two seeds here and four for MrBayes: from one seed
    alone MrBayes' frequency of a weak clade of tree 2 goes from 0.68 to 0.82)."""
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=%d swapseed=%d;\nexecute primates.nex;\n%s\n"
            "mcmc ngen=30000 nruns=2 nchains=2 samplefreq=20 printfreq=30000 diagnfreq=30000 checkpoint=no "
            "filename=po;\nend;\n")
    seeds, ours_seeds = (9, 10, 11, 12), (9, 10)
    for side in ["g%d" % s for s in ours_seeds] + ["m%d" % s for s in seeds]:
        (tmp_path / side).mkdir()
        (tmp_path / side / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    for s in seeds:
        _mb(mb, tmp_path / ("m%d" % s), text % (s, s, model))
    for s in ours_seeds:
        _mbgpu(tmp_path / ("g%d" % s), text % (s, s, model), monkeypatch)
    _core_took(core_use)
    for k in (1, 2, 3):
        ours, theirs = {}, {}
        for r in (1, 2):
            for got, sides in ((ours, ["g%d" % s for s in ours_seeds]), (theirs, ["m%d" % s for s in seeds])):
                for side in sides:
                    for c, f in _split_freqs(tmp_path / side / ("po.tree%d.run%d.t" % (k, r))).items():
                        got[c] = got.get(c, 0.0) + f / (2 * len(sides))
        assert max(theirs.values()) > 0.9
        for clade in set(ours) | set(theirs):
            assert abs(ours.get(clade, 0.0) - theirs.get(clade, 0.0)) < 0.1, (k, sorted(clade), ours.get(clade),
                                                                             theirs.get(clade))


@pytest.mark.parametrize("model", [UNLINKED, BRLENS], ids=["unlinked", "brlens"])
def test_sumt_after_the_run_summarizes_every_tree(model, mb_double, tmp_path, monkeypatch):
    """A plain `sumt;` after an mcmc with three trees (three topologies, or one with three V) summarizes
    each (MrBayes sets ntrees to their number): every tree's files equal those mb-double writes from the
    same .t files (the [ID] aside)."""
    text = ("#NEXUS\nbegin mrbayes;\nset seed=4 swapseed=4;\nexecute primates.nex;\n%s\nmcmc ngen=1000 nruns=2 "
            "nchains=1 samplefreq=10 printfreq=1000 diagnfreq=1000 checkpoint=no filename=t1;\nsumt;\nend;\n"
            % model)
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    _mbgpu(tmp_path / "g", text, monkeypatch)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    for k in (1, 2, 3):
        for r in (1, 2):
            name = "t1.tree%d.run%d.t" % (k, r)
            (tmp_path / "m" / name).write_bytes((tmp_path / "g" / name).read_bytes())
    _mb(mb_double, tmp_path / "m", "#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes;\nexecute primates.nex;\n"
        "sumt filename=t1 ntrees=3;\nend;\n")
    for k in (1, 2, 3):
        for ext in ("parts", "tstat", "vstat", "trprobs", "con.tre"):
            name = "t1.tree%d.%s" % (k, ext)
            want, got = [[ln for ln in (tmp_path / side / name).read_text().splitlines() if not ln.startswith("[ID:")]
                         for side in ("m", "g")]
            assert got == want, name


def _gen0_rates(pfile) -> list[float]:
    lines = pfile.read_text().splitlines()
    return [float(x) for name, x in zip(lines[1].split("\t"), lines[2].split("\t")) if name.startswith("r(")]


def test_site_rates_follow_each_divisions_tree(mb_double, tmp_path, monkeypatch):
    """`report siterates=yes` with three trees: the .p names are mb-double's (MrBayes numbers the columns
    division by division: r(2) is character 4), and each division's rates at generation 0 are those of a
    one-tree run of that division alone on its tree (trees b and c differ, so a wrong tree shows)."""
    model = UNLINKED + " lset rates=gamma; prset shapepr=fixed(0.3) statefreqpr=fixed(equal); report siterates=yes;"
    text = _startvals_file(tmp_path / "m", "tau{1}=a tau{2}=b v{2}=b tau{3}=c", model)
    _mb(mb_double, tmp_path / "m", text)
    _startvals_file(tmp_path / "g", "")
    _mbgpu(tmp_path / "g", text, monkeypatch)
    names = [(tmp_path / side / "sv.p").read_text().splitlines()[1] for side in ("m", "g")]
    assert names[0] == names[1] and "\tr(1)\tr(2)\tr(3)\t" in names[1]
    got = _gen0_rates(tmp_path / "g" / "sv.p")
    start = 0
    for k, tree in enumerate("abc", 1):
        alone = ("lset rates=gamma; prset shapepr=fixed(0.3) statefreqpr=fixed(equal); report siterates=yes; "
                 "exclude all; include %d-898\\3;" % k)
        one = _startvals_file(tmp_path / ("d%d" % k), "tau=%s v=%s" % (tree, tree) if tree == "b" else "tau=" + tree,
                              alone)
        _mbgpu(tmp_path / ("d%d" % k), one, monkeypatch)
        want = _gen0_rates(tmp_path / ("d%d" % k) / "sv.p")
        assert len(want) == len(range(k, 899, 3))
        np.testing.assert_allclose(got[start:start + len(want)], want, rtol=1e-12)
        start += len(want)
    assert start == len(got)


def test_allcomps_tables_and_columns_per_topology_like_mrbayes(mb_double, tmp_path, monkeypatch):
    """`mcmc allcomps=yes` with three trees and three runs: the .mcmc preamble and header (each topology's
    statistic followed by its pairs, AvgStdDev(s.tree2)(run1_run3)), the row width and, on the screen, one
    pairwise table per topology headed `in topology 0..2` (MrBayes counts them from 0 there), as mb-double."""
    text = ("#NEXUS\nbegin mrbayes;\nset autoclose=yes nowarn=yes seed=5 swapseed=7;\nexecute primates.nex;\n%s\n"
            "mcmc ngen=200 samplefreq=50 printfreq=100 diagnfreq=100 nruns=3 nchains=1 allcomps=yes filename=ac;\n"
            "end;\n" % UNLINKED)
    for side in ("g", "m"):
        (tmp_path / side).mkdir()
        (tmp_path / side / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    screens = [_mbgpu(tmp_path / "g", text, monkeypatch), _mb(mb_double, tmp_path / "m", text)]
    files = [(tmp_path / side / "ac.mcmc").read_text().splitlines() for side in ("g", "m")]
    assert files[0][1:5] == files[1][1:5] and "AvgStdDev(s.tree2)(run1_run3)" in files[0][4]
    assert [len(ln.split("\t")) for ln in files[0][4:]] == [len(ln.split("\t")) for ln in files[1][4:]]
    tables = [re.findall(r"\n( *Pairwise .*\n.*\n\n.*\n.*\n)", s) for s in screens]
    assert tables[0] == tables[1] and len(tables[0]) == 2 * 3 and "in topology 0 (upper" in tables[0][0]
