"""The .mcmc file's preamble and header as MrBayes 3.2.7a writes them (engine/output/mcmcfile.py)."""
import doctest
import re
import types

import pytest

from mbgpu.output import mcmcfile
from tests.conftest import TEST_DATA
from tests.test_output.mbpeer import run_mb, run_ours, stage

REF = "mrbayes/reference_runs/primates_gtrig_20k"


def _head(path) -> list[str]:
    """The lines after [ID: ...] up to and including the header line."""
    lines = path.read_text().splitlines()
    n = next(i for i, l in enumerate(lines) if l.startswith("Gen\t"))
    return lines[1:n + 1]


def test_doctests():
    assert doctest.testmod(mcmcfile).failed == 0


def test_one_run_has_no_run_suffix_and_no_statistic():
    moves = [types.SimpleNamespace(name="Multiplier(Alpha{1,2})", autotune=True, tuning_name="lambda"),
             types.SimpleNamespace(name="NNI(Tau{all},V{all})", autotune=False, tuning_name=None)]
    assert mcmcfile.columns([moves], 2) == ["Gen", "Multiplier(Alpha{1,2})$acc", "Multiplier(Alpha{1,2})$lambda",
                                            "NNI(Tau{all})$acc", "Swap(1<>2)$acc"]
    two = mcmcfile.columns([moves, moves], 1, "Maxstddev")
    assert two[1] == "Multiplier(Alpha{1,2})$acc_run1" and two[-2:] == ["NNI(Tau{all})$acc_run2", "MaxStdDev(s)"]
    assert len(mcmcfile.preamble(1, 1)) == 2 and mcmcfile.preamble(2, 1)[-1].endswith(
        "--  Average standard deviation of split frequencies]")


def test_header_equals_the_reference_file(shared_data, tmp_path, monkeypatch):
    """batch.nex's settings (GTR+I+G, 2 runs x 4 chains): preamble and header equal MrBayes' file."""
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    run_ours(folder, " set seed=12345 swapseed=12345; execute primates.nex;\n lset nst=6 rates=invgamma;\n"
             " mcmc ngen=100 nchains=4 nruns=2 samplefreq=100 printfreq=100 diagnfreq=100 filename=r;", monkeypatch)
    ours = _head(folder / "r.mcmc")
    assert ours[-1].split("\t")[-1] == "AvgStdDev(s)"
    assert ours == _head(shared_data / REF / "primates.nex.mcmc")


@pytest.mark.parametrize("nruns,nchains,stat", [(1, 1, "avgstddev"), (1, 2, "avgstddev"), (2, 1, "maxstddev"),
                                                (3, 3, "maxstddev")])
def test_header_like_mrbayes(mb, tmp_path, monkeypatch, nruns, nchains, stat):
    """Run suffixes, swap columns and the statistic's name for one or more runs and chains, as mb writes them."""
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    block = (" set seed=1 swapseed=1; execute primates.nex;\n lset nst=2 rates=gamma; mcmc ngen=200 nruns=%d nchains=%d"
             " samplefreq=100 printfreq=100 diagnfreq=100 diagnstat=%s filename=%%s;" % (nruns, nchains, stat))
    run_mb(mb, folder, block % "theirs")
    run_ours(folder, block % "ours", monkeypatch)
    assert _head(folder / "ours.mcmc") == _head(folder / "theirs.mcmc")


BYCODON = ("charset p1=1-898\\3; charset p2=2-898\\3; charset p3=3-898\\3; partition bycodon=3:p1,p2,p3;"
           " set partition=bycodon;")
PARTITIONED = {
    # every kind of parameter move: {all} on shared ones and on the rate multipliers, {1} on unlinked ones
    "all_kinds": BYCODON + " lset applyto=(all) nst=6 rates=invgamma; unlink shape=(all);"
                 " prset applyto=(all) ratepr=variable;",
    # {1,3} and {2}: kappa after a partial link; rate multipliers of two divisions
    "some": BYCODON + " lset applyto=(all) nst=2 rates=gamma; unlink tratio=(all); link tratio=(1,3);"
            " prset applyto=(1,2) ratepr=variable;",
}


@pytest.mark.parametrize("case", sorted(PARTITIONED))
def test_partitioned_header_like_mrbayes(mb, tmp_path, monkeypatch, case):
    """Move names carry the parameter's division suffix as MrBayes writes it (`Dirichlet(Revmat{all})$acc`,
    `Multiplier(Alpha{1})$lambda`, `Slider(Ratemultiplier{1,2})$delta`, `NNI(Tau{all})$acc`)."""
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    block = (" set seed=1 swapseed=1; execute primates.nex;\n%s\n mcmc ngen=200 nruns=1 nchains=1 samplefreq=100"
             " printfreq=100 diagnfreq=100 filename=%%s;" % PARTITIONED[case])
    run_mb(mb, folder, block % "theirs")
    run_ours(folder, block % "ours", monkeypatch)
    assert _head(folder / "ours.mcmc") == _head(folder / "theirs.mcmc")


def _gens(path) -> list[int]:
    return [int(l.split("\t")[0]) for l in path.read_text().splitlines() if l[:1].isdigit()]


def _screen_shape(text: str) -> list[str]:
    """The screen from 'Chain results' to 'Analysis completed', numbers and chain markers blanked."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if "Chain results" in l)
    end = next(i for i in range(start, len(lines)) if "Analysis completed" in lines[i])
    return ["#" if " -- " in l else re.sub(r"[0-9.]+$", "N", l.rstrip()) for l in lines[start:end]]


@pytest.mark.parametrize("ngen,diagnfreq,nruns", [(170, 100, 2), (100, 1000, 2), (150, 100, 1), (200, 100, 2)])
def test_last_generation_is_diagnosed_like_mrbayes(mb_double, tmp_path, monkeypatch, ngen, diagnfreq, nruns):
    """MrBayes diagnoses at every diagnfreq and at the last generation: a .mcmc row (the file even when
    ngen < diagnfreq) and, with several runs, a screen line, with the same blank lines around it."""
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    block = (" set seed=3 swapseed=4; execute primates.nex;\n mcmc ngen=%d nruns=%d nchains=2 samplefreq=10"
             " printfreq=50 diagnfreq=%d filename=%%s;" % (ngen, nruns, diagnfreq))
    theirs = run_mb(mb_double, folder, block % "theirs")
    ours = run_ours(folder, block % "ours", monkeypatch)
    assert _gens(folder / "ours.mcmc") == _gens(folder / "theirs.mcmc")
    assert _gens(folder / "ours.mcmc")[-1] == ngen
    assert _screen_shape(ours) == _screen_shape(theirs)


@pytest.mark.parametrize("first", [150, 200])
def test_append_drops_the_last_generation_row_like_mrbayes(mb_double, tmp_path, monkeypatch, first):
    """mcmc append=yes after a run whose last generation is off the diagnfreq cycle: MrBayes keeps the rows
    at multiples of diagnfreq and drops that last one (measured: 100 150 -> 100 200 300)."""
    folder = stage(tmp_path, TEST_DATA / "primates.nex")
    block = (" set seed=3 swapseed=4; execute primates.nex;\n mcmc ngen=%d nchains=2 samplefreq=10 printfreq=50"
             " diagnfreq=100 checkfreq=100 filename=%%s;\n mcmc ngen=300 append=yes;" % first)
    run_mb(mb_double, folder, block % "theirs")
    run_ours(folder, block % "ours", monkeypatch)
    assert _gens(folder / "ours.mcmc") == _gens(folder / "theirs.mcmc") == [100, 200, 300]
