"""`sumss` on the .p files of a MrBayes 3.2.7a `ss` run: the step contribution table and the step and
joined plots are MrBayes' own, number for number (the summary is deterministic given the files)."""
import subprocess

import pytest

from tests.helpers import output, interp_for
from tests.test_sampler.test_stepping_stone import DATA, MODEL


def _section(text: str, start: str, stop: str) -> list[str]:
    """The stripped non-empty lines from the line holding `start` up to the one holding `stop`."""
    body = text[text.index(start):]
    body = body[:body.index(stop)] if stop in body else body
    return [line.strip() for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize("options", [
    "askmore=no",
    "askmore=no allruns=no",
    "askmore=no relburnin=no burnin=3 steptoplot=2 discardfrac=0.5 smoothing=2",
])
def test_sumss_matches_mrbayes_on_its_files(mb_double, tmp_path, monkeypatch, options):
    ss = "nsteps=4 alpha=0.35 burninss=-1"
    (tmp_path / "d.nex").write_text(DATA + "begin mrbayes;\n set autoclose=yes nowarn=yes seed=7 swapseed=8;\n " + MODEL
                                    + " ss ngen=3000 samplefreq=10 printfreq=1000 nruns=2 nchains=1 %s;\n sumss %s;\n"
                                    "end;\n" % (ss, options))
    done = subprocess.run([str(mb_double), "d.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    theirs = done.stdout.split("Summarizing parameters in files")[1]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sum.nex").write_text(DATA + "begin mrbayes;\n ssp %s;\n sumss filename=d.nex nruns=2 %s;\nend;\n"
                                      % (ss, options))
    ours = output(interp_for((tmp_path / "sum.nex").read_text(), tmp_path, "sum.nex"))
    assert _section(ours, "Using ", "Step contribution") == _section(theirs, "Using ", "Step contribution")
    assert _section(ours, "Step       run1", "Step plot") == _section(theirs, "Step       run1", "Step plot")
    assert _section(ours, "Step plot", "Joined plot") == _section(theirs, "Step plot", "Joined plot")
    assert _section(ours, "Joined plot(s)", "Exiting mrbayes") == _section(theirs, "Joined plot(s)", "Exiting mrbayes")


def test_sumss_names_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Exception, match="file not found"):
        interp_for(DATA + "begin mrbayes;\n sumss filename=none nruns=2;\nend;\n", tmp_path)
