"""`ss append=yes`: a stepping-stone run stopped (with its checkpoint) in the initial burn-in, inside a
step's own burn-in, past it or at a step's end, and continued, writes the same .ss, .p, .t and .mcmc
files byte for byte and prints the same marginal likelihoods as the run that was never stopped."""
import signal

import pytest

from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.checkpoint.signals import RunStopped
from tests.test_checkpoint.common import run_in, run_text, same_outputs
from tests.test_checkpoint.test_signals import send_at
from tests.test_sampler.test_stepping_stone import DATA, MODEL

# 1200 generations: burn-in 240 (24 samples), 4 steps of 240, step burn-in 60; checkpoints every 100
SS = "ss ngen=1200 samplefreq=10 printfreq=200 diagnfreq=100 nruns=2 nchains=2 nsteps=4 filename=r %s;"
FILES = ("r.ss", "r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")


def block(extra: str = "", ss: str = SS) -> str:
    return DATA + "begin mrbayes;\n set seed=11 swapseed=12;\n " + MODEL + " " + (ss % extra) + "\nend;\n"


def marginal_lines(text: str) -> list[str]:
    """The summary's table of marginal likelihoods (run lines and mean), as printed."""
    body = text.split("Run   Marginal likelihood (ln)")[1].split("More statistics")[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("ref")
    try:
        text = run_text(folder, block("checkfreq=100"), mp)
    finally:
        mp.undo()
    return folder, text


# in the initial burn-in; its last generation; inside step 1's own burn-in; past it; a step's end; step 3
@pytest.mark.parametrize("gen", [130, 240, 250, 333, 480, 777])
def test_a_stopped_run_continues_exactly(reference, tmp_path, monkeypatch, gen):
    ref, ref_text = reference
    with monkeypatch.context() as m:
        send_at(m, gen, signal.SIGUSR1)
        with pytest.raises(RunStopped):
            run_in(tmp_path, block("checkfreq=100"), m)
    text = run_in(tmp_path, block("checkfreq=100 append=yes"), monkeypatch)
    assert "Continuing from checkpoint 'r.ckp.h5' at generation %d" % gen in text
    assert same_outputs(ref, tmp_path, FILES) == []
    assert marginal_lines(text) == marginal_lines(ref_text)


def test_an_ss_checkpoint_is_not_continued_by_mcmc_nor_by_another_schedule(reference, tmp_path, monkeypatch):
    run_text(tmp_path, block("checkfreq=100"), monkeypatch, "a.nex")
    mcmc = SS.replace("ss ", "mcmc ").replace(" nsteps=4", "")
    with pytest.raises(CheckpointMismatch, match="other mcmc settings"):
        run_text(tmp_path, block("append=yes", ss=mcmc), monkeypatch, "b.nex")
    with pytest.raises(CheckpointMismatch, match=r"other mcmc settings \(ss "):
        run_text(tmp_path, block("append=yes", ss=SS.replace("nsteps=4", "nsteps=3")), monkeypatch, "c.nex")
