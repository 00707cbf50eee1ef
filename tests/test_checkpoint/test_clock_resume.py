"""Checkpoints of clock-tree chains (mbgpu.checkpoint.clock_state): a clock run stopped at a checkpoint and
continued with `mcmc append=yes` writes byte-identical .p/.t/.mcmc files to an uninterrupted run; a
checkpoint is refused by another model (non-clock, other calibrations) or with a damaged clock state; and
the append files keep MrBayes' rows (mb-double, whose own `.ckp` file is another thing)."""
import shutil

import numpy as np
import pytest

from mbgpu.checkpoint import h5io
from mbgpu.checkpoint.errors import CheckpointMismatch
from tests.test_checkpoint.common import PRIMATES, block, hashes, run_in, run_text, same_outputs
from tests.test_clock.trees import T1, T2
from tests.test_output.mbpeer import run_mb, run_ours, stage

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes; calibrate apes=%s;"
BIRTHDEATH = ("lset nst=2 rates=gamma; " + APES % "uniform(0.15,0.3)" +
              " prset brlenspr=clock:birthdeath topologypr=constraints(apes) nodeagepr=calibrated"
              " clockratepr=lognormal(-2,0.5) treeagepr=uniform(0.5,2) speciationpr=exponential(5)"
              " extinctionpr=beta(2,2);")
MCMC = "nruns=2 nchains=2 samplefreq=10 printfreq=100 diagnfreq=40 tunefreq=20 filename=r"
T = 400


def clock_block(ngen: int, extra: str = "", model: str = BIRTHDEATH, start: str | None = None) -> str:
    """The run's commands; `start`: a rooted start tree (newick) given by startvals after the model."""
    if start is not None:
        model = "end;\nbegin trees; tree t1 = [&R] %s\nend;\nbegin mrbayes; %s startvals tau=t1 v=t1;" % (start, model)
    return block(ngen, extra, model=model, mcmc=MCMC)


def _column(path, name: str, upto: int) -> np.ndarray:
    lines = path.read_text().splitlines()[1:]
    head = lines[0].split("\t")
    rows = [ln.split("\t") for ln in lines[1:]]
    return np.array([float(r[head.index(name)]) for r in rows if int(r[0]) <= upto])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("clockref")
    try:
        run_text(folder, clock_block(T, "checkfreq=50"), mp)
    finally:
        mp.undo()
    return folder


@pytest.mark.parametrize("n", [137, 250])
def test_clock_append_is_byte_identical(reference, tmp_path, monkeypatch, n):
    """Birth-death, free clock rate, a calibrated clade, MrBayes' random start tree; two runs of two chains."""
    run_text(tmp_path, clock_block(n, "checkfreq=50"), monkeypatch, "a.nex")
    for run in ("r.run1.p", "r.run2.p"):          # the clock state had moved by the checkpoint
        for name in ("clockrate", "net_speciation", "relative_extinction", "TH"):
            assert len(set(_column(tmp_path / run, name, n))) > 2, (run, name)
    text = run_text(tmp_path, clock_block(T, "checkfreq=50 append=yes"), monkeypatch, "b.nex")
    assert "Continuing from checkpoint 'r.ckp.h5' at generation %d" % n in text
    assert same_outputs(reference, tmp_path) == []
    swaps = [ln.split("\t")[-2] for ln in (reference / "r.mcmc").read_text().splitlines() if ln[:1].isdigit()]
    assert float(swaps[-1]) > 0, "the chains swapped heats"


UNIFORM = ("lset nst=2 rates=gamma; " + APES % "uniform(0.15,0.3)" + " prset brlenspr=clock:uniform "
           "topologypr=constraints(apes) nodeagepr=calibrated clockratepr=lognormal(0,0.5) treeagepr=uniform(0.5,1);")
COALESCENCE = "lset nst=1; prset brlenspr=clock:coalescence popsizepr=gamma(2,20) clockratepr=exponential(2);"
IGR = "lset nst=2; prset brlenspr=clock:uniform clockvarpr=igr clockratepr=exponential(2);"
TK02 = "lset nst=1; prset brlenspr=clock:birthdeath clockvarpr=tk02;"
CPP = "lset nst=1; prset brlenspr=clock:uniform clockvarpr=cpp;"


@pytest.mark.parametrize("model,start,cont,n", [
    (UNIFORM, T1, None, 111),       # continued without startvals: another start tree is built first
    (UNIFORM, T1, T1, 3),           # most branches still have the start tree's written lengths
    (COALESCENCE, T2, T2, 111),
    (IGR, T1, T1, 111),             # the relaxed clocks' rates travel with the tree
    (TK02, T2, T2, 111),
    (CPP, T1, T1, 111),             # the CPP events (their rows' capacity too) travel with the tree
], ids=["uniform-calibrated", "uniform-early", "coalescence", "igr", "tk02", "cpp"])
def test_other_clock_models_resume_exactly(tmp_path, monkeypatch, model, start, cont, n):
    """A start tree as written (its branch lengths and child order stay on untouched branches), the uniform
    and coalescent priors; the calibrated node found by its clade when the rebuilt chain starts elsewhere."""
    run_text(tmp_path / "ref", clock_block(300, "checkfreq=40", model, start), monkeypatch)
    run_text(tmp_path / "cont", clock_block(n, "checkfreq=40", model, start), monkeypatch, "a.nex")
    run_text(tmp_path / "cont", clock_block(300, "checkfreq=40 append=yes", model, cont), monkeypatch, "b.nex")
    assert same_outputs(tmp_path / "ref", tmp_path / "cont") == []


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A clock run to generation 60 with its final checkpoint only."""
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("clockdone") / "w"
    try:
        run_text(folder, clock_block(60, "checkfreq=1000"), mp)
    finally:
        mp.undo()
    (folder / "run.nex").unlink()
    return folder


@pytest.mark.parametrize("model,message", [
    ("lset nst=2 rates=gamma; prset brlenspr=unconstrained:exp(10);",
     r"another model \(division 1 prset Brlenspr: Clock:Birthdeath in the checkpoint, Unconstrained:Exponential\(10"),
    (BIRTHDEATH.replace("uniform(0.15,0.3)", "uniform(0.1,0.3)"),
     r"another model \(clock models 1 node_calibrations 1 dist params 1: 0\.15 in the checkpoint, 0\.1 now\)"),
    (BIRTHDEATH.replace("Pongo Hylobates;", "Pongo;"),
     r"another model \(clock constraints apes taxa: \(2,3,4,5,6\) in the checkpoint, \(2,3,4,5\) now\)"),
])
def test_other_model_is_refused_untouched(finished, tmp_path, monkeypatch, model, message):
    work = tmp_path / "w"
    shutil.copytree(finished, work)
    before = hashes(work)
    with pytest.raises(CheckpointMismatch, match=message):
        run_in(work, block(100, "append=yes", model=model, mcmc=MCMC), monkeypatch)
    assert hashes(work) == before


def _tampered(payload: dict, key: str, change) -> dict:
    out = dict(payload)
    if change is None:
        del out[key]
    else:
        out[key] = change(out[key])
    return out


@pytest.mark.parametrize("key,change,message", [
    ("clock/parent", None, r"\(run 1, chain 2\) was written for another model: its tree is unconstrained, this "
                           r"model's is a clock tree"),
    ("clock/rate", lambda a: a * 1.5, r"\(run 1, chain 2\): the log prior recomputed from the stored clock tree"),
    ("clock/param_values", lambda a: a * 0.9, r"the log prior recomputed from the stored clock tree"),
    ("clock/param_values", lambda a: a * 1.5, r"the log prior recomputed from the stored clock tree \(nan\)"),
    ("clock/brlen", lambda a: a * 1.5, r"\(run 1, chain 2\): its clock tree does not match its stored unrooted"),
    ("clock/param_names", lambda s: s.replace("net_speciation", "popsize"),
     r"its tree-prior parameters are popsize, relative_extinction, this model's are net_speciation"),
])
def test_damaged_clock_state_is_refused(finished, tmp_path, monkeypatch, key, change, message):
    """Valid checksums, a clock state that does not fit: refused before any file is touched."""
    work = tmp_path / "w"
    shutil.copytree(finished, work)
    payload = h5io.read_file(str(work / "r.ckp.h5"))
    k = "chains/run0_chain1/" + key
    assert k in payload
    h5io.write_file(str(work / "r.ckp.h5"), _tampered(payload, k, change), {})
    before = hashes(work)
    with pytest.raises(CheckpointMismatch, match=message):
        run_in(work, clock_block(100, "append=yes"), monkeypatch)
    assert hashes(work) == before


def _gens(path) -> list[int]:
    return [int(ln.split("\t")[0]) for ln in path.read_text().splitlines() if ln[:1].isdigit()]


def _tree_gens(path) -> list[str]:
    return [ln.split()[1] for ln in path.read_text().splitlines() if ln.strip().startswith("tree gen.")]


def test_clock_append_keeps_mrbayes_rows(mb_double, tmp_path, monkeypatch):
    """A clock run to 150 continued to 300 in one session: the .p, .t and .mcmc rows are MrBayes' (measured:
    .mcmc 100 200 300, the row at 150 dropped). MrBayes' own checkpoint (theirs.ckp) is left alone."""
    folder = stage(tmp_path, PRIMATES)
    text = (" set seed=3 swapseed=4; execute primates.nex;\n %s\n mcmc ngen=150 nruns=2 nchains=2 samplefreq=10"
            " printfreq=50 diagnfreq=100 checkfreq=100 filename=%%s;\n mcmc ngen=300 append=yes;" % BIRTHDEATH)
    run_mb(mb_double, folder, text % "theirs")
    theirs = {p.name: p.read_bytes() for p in folder.glob("theirs*")}
    assert "theirs.ckp" in theirs
    run_ours(folder, text % "ours", monkeypatch)
    assert {p.name: p.read_bytes() for p in folder.glob("theirs*")} == theirs
    assert (folder / "ours.ckp.h5").exists() and not (folder / "ours.ckp").exists()
    assert _gens(folder / "ours.mcmc") == _gens(folder / "theirs.mcmc") == [100, 200, 300]
    for run in ("run1", "run2"):
        assert _gens(folder / ("ours.%s.p" % run)) == _gens(folder / ("theirs.%s.p" % run))
        assert _tree_gens(folder / ("ours.%s.t" % run)) == _tree_gens(folder / ("theirs.%s.t" % run))
