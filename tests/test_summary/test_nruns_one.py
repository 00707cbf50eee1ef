"""One run: mcmc writes NAME.p / NAME.t like MrBayes, and sump/sumt read them without `nruns=1`
(they take the number of runs from the last mcmc, as MrBayes' DoMcmc does)."""
import pytest

from mbgpu.errors import InputFileError
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

MCMC = (" set seed=5 swapseed=5; execute primates.nex;\n lset nst=6 rates=invgamma;"
        " mcmc ngen=1000 nruns=1 nchains=1 samplefreq=50 printfreq=500 diagnfreq=500 filename=%s;")


def test_mcmc_then_sump_sumt(tmp_path, monkeypatch):
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    text = run_ours(folder, MCMC % "one" + "\n sump;\n sumt;", monkeypatch)
    assert {p.name for p in folder.glob("one.*")} == {"one.p", "one.t", "one.mcmc", "one.ckp.h5", "one.pstat",
                                                        "one.lstat", "one.parts", "one.tstat", "one.vstat",
                                                        "one.trprobs", "one.con.tre"}
    assert "   Summarizing parameters in file one.p" in text and '   Summarizing trees in file "one.t"' in text
    assert len((folder / "one.pstat").read_text().splitlines()) == 2 + 13   # [ID], header, TL + 12 parameters
    stamp = (folder / "one.p").read_text().splitlines()[0]               # this session's run's [ID: ...]
    for ext in ("pstat", "lstat", "parts", "tstat", "con.tre", "trprobs"):
        assert stamp in (folder / ("one." + ext)).read_text().splitlines()[:2], ext


def test_explicit_nruns_still_wins(tmp_path, monkeypatch):
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    with pytest.raises(InputFileError) as e:
        run_ours(folder, MCMC % "one" + "\n sump nruns=2;", monkeypatch)
    assert "one.run1.p" in e.value.one_line()


def test_mrbayes_one_run_files(mb, tmp_path, monkeypatch):
    """MrBayes' own nruns=1 output: it writes NAME.p / NAME.t, and our sump/sumt on those files, in a session
    that ran no mcmc, write what MrBayes' sump/sumt write in such a session (no [ID] line; .trprobs: same
    trees and probabilities, child order inside the Newick may differ)."""
    folder = stage(tmp_path / "mb", TEST_DATA / "primates.nex")
    run_mb(mb, folder, MCMC % "one")
    assert (folder / "one.p").exists() and (folder / "one.t").exists() and not (folder / "one.run1.p").exists()
    summaries = " execute primates.nex;\n sump filename=one nruns=1;\n sumt filename=one nruns=1;"
    run_mb(mb, folder, summaries)
    ours = stage(tmp_path / "us", TEST_DATA / "primates.nex")
    for ext in ("p", "t"):
        (ours / ("one." + ext)).write_bytes((folder / ("one." + ext)).read_bytes())
    run_ours(ours, summaries, monkeypatch)
    assert not (ours / "one.pstat").read_text().startswith("[ID:")
    for ext in ("pstat", "lstat", "parts", "tstat", "vstat", "con.tre"):
        assert (ours / ("one." + ext)).read_text() == (folder / ("one." + ext)).read_text(), ext
    a, b = ((f / "one.trprobs").read_text().splitlines() for f in (ours, folder))
    assert [l.split("] (")[0] for l in a] == [l.split("] (")[0] for l in b]
