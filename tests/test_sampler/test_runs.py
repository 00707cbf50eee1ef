"""End-to-end runs through the command language: reproducibility, files, errors."""
import io
import re

import pytest

from mbgpu.console import Console
from mbgpu.errors import MbgpuError
from mbgpu.interpreter import Interpreter
from tests.conftest import TEST_DATA

BLOCK = ("begin mrbayes; set seed=3 swapseed=4; execute {data};\n lset nst=6 rates=invgamma;\n"
         " mcmc ngen=300 nruns=2 nchains=3 samplefreq=20 printfreq=100 diagnfreq=100 tunefreq=50 filename=r; end;\n")


def run_block(folder, text, monkeypatch):
    """Run `text` as a file in `folder`, with `folder` as the working directory (where files go)."""
    folder.mkdir(exist_ok=True)
    monkeypatch.chdir(folder)
    (folder / "run.nex").write_text("#NEXUS\n" + text)
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(folder / "run.nex"))
    return out.getvalue()


def test_same_seed_gives_byte_identical_files(tmp_path, monkeypatch):
    data = TEST_DATA / "primates.nex"
    for name in ("a", "b"):
        run_block(tmp_path / name, BLOCK.format(data=data), monkeypatch)
    for fname in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc"):
        a, b = (tmp_path / "a" / fname), (tmp_path / "b" / fname)
        assert a.read_bytes() == b.read_bytes(), fname
    p = (tmp_path / "a" / "r.run1.p").read_text().splitlines()
    assert p[1].split("\t")[:4] == ["Gen", "LnL", "LnPr", "TL"] and len(p) == 2 + 16
    assert [int(l.split("\t")[0]) for l in p[2:]] == list(range(0, 301, 20))
    t = (tmp_path / "a" / "r.run1.t").read_text()
    assert t.startswith("#NEXUS\n[ID: ") and t.rstrip().endswith("end;") and t.count("tree gen.") == 16
    # one stamp for every file of the analysis, as in MrBayes' reference run (primates_gtrig_20k: the
    # .run1.p, .run2.p and .mcmc files all say [ID: 6580315779])
    stamps = {re.search(r"\[ID: (\d+)\]", (tmp_path / "a" / f).read_text()).group(1)
              for f in ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")}
    assert len(stamps) == 1, stamps


def test_screen_output_like_mrbayes(tmp_path, monkeypatch):
    text = run_block(tmp_path / "s", BLOCK.format(data=TEST_DATA / "primates.nex"), monkeypatch)
    assert "Initial log likelihoods and log prior probs for run 2:" in text
    assert re.search(r"\n +100 -- (\[|\()-\d+\.\d{3}(\]|\)) .* \* .* -- \d+:\d\d:\d\d", text)
    assert "Average standard deviation of split frequencies:" in text
    assert 'Acceptance rates for the moves in the "cold" chain of run 1:' in text
    assert "Chain swap information for run 2:" in text and "(cold chain)" in text
    mcmc = (tmp_path / "s" / "r.mcmc").read_text().splitlines()
    head = mcmc[5].split("\t")
    assert head[0] == "Gen" and "Dirichlet(Revmat)$alpha_run1" in head and "ExtSPR(Tau)$acc_run2" in head
    assert head[-1] == "AvgStdDev(s)" and "Swap(1<>3)$acc(2)" in head


def test_unsupported_model_stops_before_writing(tmp_path, monkeypatch):
    with pytest.raises(MbgpuError, match="lset rates=Adgamma is not supported yet"):
        run_block(tmp_path / "u", "begin mrbayes; execute %s;\n lset rates=adgamma; mcmc ngen=10; end;\n"
                  % (TEST_DATA / "primates.nex"), monkeypatch)
    assert not list((tmp_path / "u").glob("*.p"))


def test_non_finite_state_stops_the_run_and_writes_no_nan(tmp_path, monkeypatch):
    """A non-finite log likelihood reaching a sample stops the run with a clear error; no file gets nan."""
    from mbgpu.sampler import sink

    real = sink.FileSink.sample

    def poisoned(self, gen, mc3):
        if gen == 40:
            mc3.cold(0).lnl = float("nan")
        return real(self, gen, mc3)

    monkeypatch.setattr(sink.FileSink, "sample", poisoned)
    with pytest.raises(MbgpuError, match="run 1 reached a non-finite state at generation 40"):
        run_block(tmp_path / "n", BLOCK.format(data=TEST_DATA / "primates.nex"), monkeypatch)
    rows = (tmp_path / "n" / "r.run1.p").read_text().splitlines()
    assert rows[-1].split("\t")[0] == "20"
    for f in (tmp_path / "n").iterdir():
        assert not re.search(r"\b(nan|inf)\b", f.read_text(), re.IGNORECASE), f.name
