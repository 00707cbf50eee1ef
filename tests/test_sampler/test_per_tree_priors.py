"""Per-tree priors with several trees (`unlink topology`, `unlink brlens`), checked against MrBayes 3.2.7a
(mb-double): `prset applyto=(k) topologypr=constraints(...)` / `fixed(...)` constrain or fix only tree k's
topology, `prset applyto=(k) brlenspr=...` sets only V{k}'s prior, and divisions whose priors differ get
trees of their own even where their topologies (branch lengths) are linked: MrBayes shares a Tau (a V)
only between divisions with the same topology (brlens) prior, so `prset applyto=(1) topologypr=...` alone
gives Tau{1} and Tau{2,3}, `prset applyto=(1) brlenspr=...` alone Tau{all} with V{1} and V{2,3}.

mbgpu's state after some generations is given to MrBayes as its start state (`startvals tau{k}= V{k}=`):
MrBayes' Gen-0 LnL and LnPr must equal mbgpu's row. Model summary, move list and the all-0.02 start prior
are compared with MrBayes' screen, and a short posterior shows that only the constrained tree keeps the
clade, in both programs.
"""
import re

import pytest

import mbgpu.sampler.batch_step as batch_step
from mbgpu.errors import MbgpuError
from tests.conftest import TEST_DATA
from tests.test_sampler import test_unlinked_trees as unlinked

core_use = unlinked.core_use
TAXA = [ln.split()[0] for ln in (TEST_DATA / "primates.nex").read_text().split("matrix")[1].splitlines()[1:13]]
CODON = unlinked.CODON
# b breaks hp (Lemur with Homo); c holds it
TREES = ("begin trees;\n"
         " tree b = (1:0.1,(2:0.1,3:0.05):0.02,(4:0.1,(5:0.1,(6:0.3,(7:0.1,(8:0.1,(9:0.1,(10:0.1,(11:0.1,12:0.1):0.1)"
         ":0.1):0.1):0.1):0.1):0.1):0.1):0.1);\n"
         " tree c = (1:0.1,2:0.2,(((3:0.05,4:0.06):0.02,5:0.07):0.03,(6:0.1,(7:0.12,(8:0.1,(9:0.1,(10:0.1,(11:0.1,"
         "12:0.1):0.1):0.1):0.1):0.1):0.1):0.04):0.05);\n"
         "end;\n")
HP = "constraint hp hard = Homo_sapiens Pan Gorilla;"
SETTING = "set seed=11 swapseed=3 precision=15 scientific=no; " + CODON


def _files(folder, model: str, run: str, trees: str = TREES) -> str:
    """A command file on primates (copied beside it) with `trees`, then `model` and `run`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    return ("#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%sbegin mrbayes; %s %s %s end;\n"
            % (trees, SETTING, model, run))


def _mbgpu(folder, text: str, monkeypatch) -> str:
    return unlinked._mbgpu(folder, text, monkeypatch)


def _mb(mb_double, folder, text: str) -> str:
    return unlinked._mb(mb_double, folder, text)


def _clades(tfile) -> list[set]:
    """Every sampled tree of a .t file as its splits (mbgpu's _split_sets)."""
    return [_split_sets(line.split("=", 1)[1].replace("[&U]", "").strip()) for line in tfile.read_text().splitlines()
            if line.strip().startswith("tree gen.")]


def _holds(clades: set, taxa: set, n: int = 12) -> bool:
    """Whether an unrooted tree (its clades) has the split taxa | rest."""
    rest = frozenset(range(1, n + 1)) - taxa
    return frozenset(taxa) in clades or rest in clades


# prset per tree: Tau{1} constrained to hp, Tau{2} fixed to b (which breaks hp), Tau{3} free
PER_TREE = HP + " unlink topology=(all); prset applyto=(1) topologypr=constraints(hp); " \
    "prset applyto=(2) topologypr=fixed(b); prset statefreqpr=fixed(equal);"


# per-tree brlens priors: V{1} exponential(5) on three topologies; inside the linked topology V{2} uniform
# (Tau{all}, V{1}, V{2}, V{3}); without unlink V{1} and V{2,3} on one Tau{all}
EXP1 = "unlink topology=(all); prset applyto=(1) brlenspr=unconstrained:exp(5); prset statefreqpr=fixed(equal);"
UNI2 = "unlink brlens=(all); prset applyto=(2) brlenspr=unconstrained:uniform(0,0.5); prset statefreqpr=fixed(equal);"
SPLIT = "prset applyto=(1) brlenspr=unconstrained:exp(5); prset statefreqpr=fixed(equal);"
SCORED = [(PER_TREE, 3, "tau{1}=t1 V{1}=t1 V{2}=t2 tau{3}=t3 V{3}=t3"),
          (EXP1, 3, "tau{1}=t1 V{1}=t1 tau{2}=t2 V{2}=t2 tau{3}=t3 V{3}=t3"),
          (UNI2, 3, "tau=t1 V{1}=t1 V{2}=t2 V{3}=t3"),
          (SPLIT, 2, "tau=t1 V{1}=t1 V{2,3}=t2")]


@pytest.mark.parametrize("model, n_trees, start", SCORED, ids=["topology-priors", "brlens-exp", "brlens-shared",
                                                               "brlens-split"])
@pytest.mark.parametrize("path", ["core", "interpreted", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_per_tree_priors_score_as_mrbayes_scores_them(path, model, n_trees, start, mb_double, tmp_path, monkeypatch,
                                                      core_use):
    """After 300 generations (topology priors: tree 1 still holds hp, tree 2 keeps b's topology with new
    lengths, tree 3 moved freely; brlens priors: each V moved under its own prior) MrBayes started on
    mbgpu's trees (which it refuses where they break their priors) computes the same LnL and LnPr (1e-6:
    the constrained and fixed topology terms, each V's brlens term) and TL of each tree."""
    if path == "interpreted":
        monkeypatch.setattr(batch_step, "core_for", lambda chains: None)
    run = "mcmc ngen=300 samplefreq=100 printfreq=100 nruns=1 nchains=1 filename=u;"
    _mbgpu(tmp_path / "g", _files(tmp_path / "g", "set backend=%s; %s" % ("gpu" if path == "gpu" else "cpu", model),
                                 run), monkeypatch)
    trees = [unlinked._last_tree(tmp_path / "g" / ("u.tree%d.t" % k), TAXA) for k in range(1, n_trees + 1)]
    got = unlinked._row(tmp_path / "g" / "u.p", 300)
    block = TREES.replace("end;\n", "".join(" tree t%d = %s;\n" % (k, t.rstrip(";")) for k, t in enumerate(trees, 1))
                          + "end;\n")
    _mb(mb_double, tmp_path / "m", _files(tmp_path / "m", model, "startvals %s; mcmc ngen=1 samplefreq=1 nruns=1 "
                                          "nchains=1 mcmcdiagn=no checkpoint=no filename=u;" % start, block))
    want = unlinked._row(tmp_path / "m" / "u.p", 0)
    assert list(want) == list(got)
    for col in ["LnL", "LnPr"] + [c for c in want if c.startswith("TL")]:
        assert abs(float(got[col]) - float(want[col])) < 1e-6, (col, got[col], want[col])
    assert core_use == ([] if path == "interpreted" else [""])


def _screen_part(out: str) -> list[str]:
    """The model summary's parameter paragraphs and the move list, without indentation or blank lines."""
    lines = [ln.strip() for ln in out.splitlines()]
    first = next(i for i, ln in enumerate(lines) if ln.startswith("Active parameters"))
    last = next(i for i, ln in enumerate(lines) if ln.startswith("Division 1 has"))
    return [ln for ln in lines[first:last] if ln and ln != "Compressing data matrix"]


@pytest.mark.parametrize("model", [
    PER_TREE,
    HP + " prset applyto=(1) topologypr=constraints(hp);",               # Tau{1}, Tau{2,3}: priors differ
    HP + " prset applyto=(1,2) topologypr=constraints(hp);",             # Tau{1,2}, Tau{3}
    "prset applyto=(3) topologypr=fixed(b);",                            # Tau{1,2}, Tau{3} fixed
    "unlink topology=(all); prset topologypr=fixed(b);",                 # three fixed Tau: brlens moves only
    "unlink brlens=(all); prset topologypr=fixed(b);",                   # Tau{all} fixed: no MultNNI
    HP + " unlink brlens=(all); prset topologypr=constraints(hp);",      # MultNNI under the constraint
    EXP1, UNI2, SPLIT,                                                   # brlens priors per V
], ids=["per-tree", "split-1", "split-12", "split-fixed", "all-fixed", "brlens-fixed", "brlens-constrained",
        "brlens-exp", "brlens-shared", "brlens-split"])
def test_model_summary_moves_and_start_prior_like_mrbayes(model, mb_double, tmp_path, monkeypatch):
    """The screen's parameters (Tau{k} with its prior text, V{k}) and move list (no moves for a fixed Tau,
    MultNNI only for a free shared one) are MrBayes', and so is the Gen-0 LnPr (every branch 0.02: the
    brlens terms and one topology term per Tau, constrained, fixed or uniform)."""
    run = "prset statefreqpr=fixed(equal); mcmc ngen=1 samplefreq=1 printfreq=1 nruns=1 nchains=1 mcmcdiagn=no " \
          "checkpoint=no filename=u;"
    mine = _mbgpu(tmp_path / "g", _files(tmp_path / "g", model, run), monkeypatch)
    theirs = _mb(mb_double, tmp_path / "m", _files(tmp_path / "m", model, run))
    assert _screen_part(mine) == _screen_part(theirs)
    got, want = unlinked._row(tmp_path / "g" / "u.p", 0), unlinked._row(tmp_path / "m" / "u.p", 0)
    assert list(got) == list(want)
    assert abs(float(got["LnPr"]) - float(want["LnPr"])) < 1e-6


@pytest.mark.parametrize("path", ["core", "interpreted"])
def test_only_the_constrained_tree_keeps_the_clade(path, mb_double, tmp_path, monkeypatch, core_use):
    """`prset applyto=(1) topologypr=constraints(hs)` with a clade the data reject (Homo with Saimiri):
    every sampled tree 1 holds it, in mbgpu as in MrBayes, and trees 2 and 3 mostly do not."""
    if path == "interpreted":
        monkeypatch.setattr(batch_step, "core_for", lambda chains: None)
    model = ("constraint hs hard = Homo_sapiens Saimiri_sciureus; unlink topology=(all); "
             "prset applyto=(1) topologypr=constraints(hs);")
    run = "mcmc ngen=3000 samplefreq=20 printfreq=1000 nruns=1 nchains=1 mcmcdiagn=no checkpoint=no filename=u;"
    _mbgpu(tmp_path / "g", _files(tmp_path / "g", model, run, ""), monkeypatch)
    _mb(mb_double, tmp_path / "m", _files(tmp_path / "m", model, run, ""))
    hs = {TAXA.index("Homo_sapiens") + 1, TAXA.index("Saimiri_sciureus") + 1}
    for folder in ("g", "m"):
        samples = [_clades(tmp_path / folder / ("u.tree%d.t" % k)) for k in (1, 2, 3)]
        assert all(_holds(c, hs) for c in samples[0]), folder
        for k in (1, 2):
            late = samples[k][len(samples[k]) // 2:]
            assert sum(_holds(c, hs) for c in late) < len(late) / 2, (folder, k)
    assert core_use == ([] if path == "interpreted" else [""])


@pytest.mark.parametrize("startvals, mine, theirs", [
    ("tau{1}=b", "startvals tau{1}=b: the tree breaks constraint 'hp'", "Tree breaks constraint 'hp'"),
    ("tau{2}=c", "startvals tau{2}=c: the topology is fixed", "The parameter 'Tau{2}' is fixed"),
    ("v{2}=c", "Topology of user tree 'c' wrong in setting parameter 'V{2}'",
     "Topology of user tree 'c' wrong in setting parameter 'V{2}'"),
])
def test_start_trees_that_break_a_trees_prior_are_refused_like_mrbayes(startvals, mine, theirs, mb_double, tmp_path,
                                                                       monkeypatch):
    """startvals for one tree are checked against that tree's prior only, with MrBayes' errors."""
    text = _files(tmp_path / "g", PER_TREE, "startvals %s; mcmc ngen=1 nruns=1 nchains=1 filename=u;" % startvals)
    with pytest.raises(MbgpuError) as err:
        _mbgpu(tmp_path / "g", text, monkeypatch)
    assert mine in str(err.value)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "cmd.nex").write_text(text)
    (folder / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    out = unlinked.subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True,
                                  timeout=300).stdout
    assert theirs in out
    # and the other trees' start values are taken: tau{1}=c holds hp, tau{3}=b is free
    _mbgpu(tmp_path / "ok", _files(tmp_path / "ok", PER_TREE, "startvals tau{1}=c tau{3}=b; mcmc ngen=1 nruns=1 "
                                   "nchains=1 filename=u;"), monkeypatch)


def test_parsimony_start_of_trees_sharing_a_topology_like_mrbayes(mb_double, tmp_path, monkeypatch, core_use):
    """`unlink brlens=(all)` with `starttree=parsimony`: as in MrBayes every chain's three trees start on one
    stepwise-addition topology (built from all the data) with every branch 0.02 (the same Gen-0 LnPr and TL{k}
    as MrBayes'), far shorter (Fitch, all data) than random trees and as short as MrBayes' (random addition:
    not the same trees)."""
    from mbgpu.analysis import division_pattern_sets
    from mbgpu.start_state import taxon_index
    from mbgpu.tree import random_tree
    from tests.helpers import interp_for
    from tests.test_sampler.primates_runs import primates_data
    from tests.test_sampler.test_start_options import _fitch_length

    import numpy as np

    run = ("unlink brlens=(all); prset statefreqpr=fixed(equal); mcmc ngen=1 samplefreq=1 printfreq=1 nruns=2 "
           "nchains=1 mcmcdiagn=no checkpoint=no starttree=parsimony filename=u;")
    _mbgpu(tmp_path / "g", _files(tmp_path / "g", "", run, ""), monkeypatch)
    _mb(mb_double, tmp_path / "m", _files(tmp_path / "m", "", run, ""))
    (tmp_path / "d").mkdir()
    it = interp_for("#NEXUS\n" + primates_data(), tmp_path / "d")
    ps = division_pattern_sets(it.settings)[0][0]
    index = taxon_index(it.settings.matrix.taxa, {})
    lengths = {}
    for side in ("g", "m"):
        lengths[side] = []
        for r in (1, 2):
            row = unlinked._row(tmp_path / side / ("u.run%d.p" % r), 0)
            assert abs(float(row["LnPr"]) - 151.723396) < 1e-6 and all(float(row["TL{%d}" % k]) == 0.42
                                                                      for k in (1, 2, 3)), (side, row)
            trees = [re.search(r"tree gen\.0 = \[&U\] (.*;)", (tmp_path / side / ("u.tree%d.run%d.t" % (k, r)))
                               .read_text()).group(1) for k in (1, 2, 3)]
            assert len({frozenset(map(frozenset, _split_sets(t))) for t in trees}) == 1, (side, trees)
            lengths[side].append(_fitch_length(trees[0], index, ps.masks, ps.weights))
    rng = np.random.default_rng(1)
    random_len = np.mean([_fitch_length(random_tree(12, rng).to_newick(it.settings.matrix.taxa), index, ps.masks,
                                        ps.weights) for _ in range(20)])
    assert max(lengths["g"] + lengths["m"]) < 0.9 * random_len, (lengths, random_len)
    assert min(lengths["g"]) <= max(lengths["m"]) + 5, lengths
    assert core_use == [""]


def _split_sets(newick: str) -> set:
    """The splits of a .t tree (translate numbers 1..12, lengths dropped), each as its side without 1."""
    plain = re.sub(r":[0-9.eE+-]+", "", newick).rstrip(";")
    stack, clades = [[]], set()
    for tok in re.findall(r"\(|\)|\d+", plain):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            inner = stack.pop()
            clades.add(frozenset(inner))
            stack[-1].extend(inner)
        else:
            stack[-1].append(int(tok))
    return {min(c, frozenset(range(1, 13)) - c, key=lambda s: (1 in s, sorted(s))) for c in clades}


@pytest.mark.parametrize("change, lnpr", [
    ("unlink topology=(all);", 111.123932),                  # three random Tau, every branch 0.02
    ("unlink brlens=(all);", 151.723396),                    # one random Tau, three V of 0.02
    (HP + " prset applyto=(1) topologypr=constraints(hp);", 78.761661),    # Tau{1}, Tau{2,3}
    ("prset statefreqpr=fixed(equal);", 37.041311),          # one tree: also forgotten
    ("lset nst=1;", 37.041311),
    ("link statefreq=(all);", 37.041311),
])
def test_startvals_before_a_model_command_are_forgotten_like_mrbayes(change, lnpr, mb_double, tmp_path, monkeypatch):
    """`startvals tau=c v=c` and then lset, prset, link or unlink (which rebuild MrBayes' model): MrBayes
    starts from random trees of 0.02 branches, not from c (LnPr 11.207093 with one tree); so does mbgpu,
    which no longer refuses plain tau=/v= before an unlink."""
    run = "prset statefreqpr=fixed(equal); startvals tau=c v=c; %s mcmc ngen=1 samplefreq=1 printfreq=1 nruns=1 " \
          "nchains=1 mcmcdiagn=no checkpoint=no filename=u;" % change
    _mbgpu(tmp_path / "g", _files(tmp_path / "g", "", run), monkeypatch)
    _mb(mb_double, tmp_path / "m", _files(tmp_path / "m", "", run))
    for side in ("g", "m"):
        row = unlinked._row(tmp_path / side / "u.p", 0)
        assert abs(float(row["LnPr"]) - lnpr) < 1e-6, (side, row)
        assert {float(v) for k, v in row.items() if k.startswith("TL")} == {0.42}, (side, row)
