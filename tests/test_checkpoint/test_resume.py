"""Byte-identical continuation: run to N, `mcmc append=yes` to T, compare with a straight run to T."""
import pytest

from tests.test_checkpoint.common import OUTPUTS, block, run_text, same_outputs

T = 300
SUMMARY = "sump filename=r; sumt filename=r;"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("ref")
    try:
        run_text(folder, block(T, "checkfreq=50") + "begin mrbayes; %s end;\n" % SUMMARY, mp)
    finally:
        mp.undo()
    return folder


@pytest.mark.parametrize("n", [41, 137, 150, 200])
def test_append_is_byte_identical(reference, tmp_path, monkeypatch, n):
    """N not a multiple of samplefreq (20) or checkfreq (50): the final checkpoint at N is exact too."""
    run_text(tmp_path, block(n, "checkfreq=50"), monkeypatch, "a.nex")
    assert (tmp_path / "r.ckp.h5").exists()
    text = run_text(tmp_path, block(T, "checkfreq=50 append=yes") + "begin mrbayes; %s end;\n" % SUMMARY,
                    monkeypatch, "b.nex")
    assert "Continuing from checkpoint 'r.ckp.h5' at generation %d" % n in text
    assert same_outputs(reference, tmp_path) == []
    kinds = (".pstat", ".tstat", ".parts", ".trprobs", ".tre", ".vstat")
    summaries = sorted(p.name for p in reference.iterdir() if p.name.startswith("r.") and p.suffix in kinds)
    assert summaries, "sump/sumt wrote no summary files"
    assert same_outputs(reference, tmp_path, summaries) == []


def test_leftover_rows_and_files_after_the_checkpoint_are_dropped(reference, tmp_path, monkeypatch):
    """As after a crash: rows past the checkpoint, and a .mcmc file the checkpoint did not know, go. The run
    to 45 checkpoints at 40 (kept as r.ckp.h5~, before the first diagnostic at 60) and at 45, after its
    last-generation .mcmc row; without r.ckp.h5 the continuation starts from r.ckp.h5~."""
    run_text(tmp_path, block(45, "checkfreq=20"), monkeypatch, "a.nex")
    assert (tmp_path / "r.mcmc").exists() and (tmp_path / "r.ckp.h5~").exists()
    (tmp_path / "r.ckp.h5").unlink()
    with open(tmp_path / "r.mcmc", "a") as fh:
        fh.write("left over by a crashed run\n")
    with open(tmp_path / "r.run1.p", "a") as fh:
        fh.write("60\t-1.0\t-2.0\n")
    text = run_text(tmp_path, block(T, "checkfreq=1000 append=yes"), monkeypatch, "b.nex")
    assert "at generation 40" in text
    assert same_outputs(reference, tmp_path) == []


def test_append_drops_the_last_generation_diagnostics(reference, tmp_path, monkeypatch):
    """A run to 100 (diagnfreq 60) writes .mcmc rows 60 and 100; its continuation keeps 60 only, then goes on
    to the rows of a straight run (MrBayes' append does the same: tests/test_output/test_mcmcfile.py)."""
    run_text(tmp_path, block(100, "checkfreq=1000"), monkeypatch, "a.nex")
    gens = [l.split("\t")[0] for l in (tmp_path / "r.mcmc").read_text().splitlines() if l[:1].isdigit()]
    assert gens == ["60", "100"]
    run_text(tmp_path, block(T, "checkfreq=1000 append=yes"), monkeypatch, "b.nex")
    assert same_outputs(reference, tmp_path) == []


def test_two_appends_and_a_no_op(reference, tmp_path, monkeypatch):
    run_text(tmp_path, block(90, "checkfreq=1000"), monkeypatch, "a.nex")
    run_text(tmp_path, block(210, "checkfreq=1000 append=yes"), monkeypatch, "b.nex")
    run_text(tmp_path, block(210, "checkfreq=1000 append=yes"), monkeypatch, "c.nex")  # nothing left to do
    run_text(tmp_path, block(T, "checkfreq=1000 append=yes"), monkeypatch, "d.nex")
    assert same_outputs(reference, tmp_path) == []


def test_resume_in_the_same_session(reference, tmp_path, monkeypatch):
    text = block(120, "checkfreq=50") + "begin mrbayes; mcmc ngen=%d append=yes; end;\n" % T
    run_text(tmp_path, text, monkeypatch)
    assert same_outputs(reference, tmp_path) == []


def test_resume_from_a_mid_run_checkpoint(reference, tmp_path, monkeypatch):
    """A run that got further than its last checkpoint (as after a crash) continues from the checkpoint."""
    run_text(tmp_path, block(T, "checkfreq=100"), monkeypatch, "a.nex")
    (tmp_path / "r.ckp.h5").replace(tmp_path / "r.ckp.h5.full")
    (tmp_path / "r.ckp.h5~").rename(tmp_path / "r.ckp.h5")  # the checkpoint at generation 200
    text = run_text(tmp_path, block(T, "checkfreq=100 append=yes"), monkeypatch, "b.nex")
    assert "at generation 200" in text
    assert same_outputs(reference, tmp_path) == []


@pytest.mark.parametrize("model,mcmc", [
    ("charset a=1-400; charset b=401-898; partition p=2:a,b; set partition=p; lset applyto=(1) nst=2 rates=gamma;"
     " lset applyto=(2) nst=1; prset ratepr=variable; unlink statefreq=(all);",
     "nruns=2 nchains=2 samplefreq=10 printfreq=100 diagnfreq=40 tunefreq=20 filename=r"),
    ("lset nst=2;", "nruns=1 nchains=2 samplefreq=10 printfreq=100 diagnfreq=40 tunefreq=20 filename=r data=no"),
])
def test_other_models_resume_exactly(tmp_path, monkeypatch, model, mcmc):
    names = ("r.p", "r.t", "r.mcmc") if "nruns=1" in mcmc else OUTPUTS
    run_text(tmp_path / "ref", block(160, "checkfreq=30", model=model, mcmc=mcmc), monkeypatch)
    run_text(tmp_path / "cont", block(73, "checkfreq=30", model=model, mcmc=mcmc), monkeypatch, "a.nex")
    run_text(tmp_path / "cont", block(160, "checkfreq=30 append=yes", model=model, mcmc=mcmc), monkeypatch, "b.nex")
    assert same_outputs(tmp_path / "ref", tmp_path / "cont", names) == []
