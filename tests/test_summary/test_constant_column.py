"""A parameter that is constant in a run has an ESS of 0/0 there; sump prints it as MrBayes 3.2.7a does.

MrBayes keeps the first run's ESS as the minimum unless a later one is smaller (a NaN never is) and sums
them for the average: constant in the first run, min and avg ESS are both NaN and printed `NA`; constant
in a later run only, the minimum is a number and the average is NaN, which C prints as `-nan`.
"""
import subprocess

import numpy as np
import pytest

from mbgpu.summary.common import c_fixed, mb_num
from tests.helpers import interp_for, output

STAT_COLUMNS = 9


def _write_runs(folder, constant_in: int) -> None:
    rng = np.random.default_rng(5)
    for run in (1, 2):
        rows = ["[ID: 123]", "Gen\tLnL\tLnPr\tTL\talpha"]
        for g in range(0, 10000, 100):
            alpha = 0.5 if run == constant_in else 0.5 + 0.1 * rng.random()
            rows.append("%d\t%f\t%f\t%f\t%f" % (g, -100 - rng.random(), -5 - rng.random(), 1 + rng.random(), alpha))
        (folder / ("d.run%d.p" % run)).write_text("\n".join(rows) + "\n")


def _sump(tmp_path, monkeypatch, constant_in: int) -> tuple[str, str]:
    _write_runs(tmp_path, constant_in)
    monkeypatch.chdir(tmp_path)
    it = interp_for("#NEXUS\nbegin mrbayes;\n sump filename=d nruns=2;\nend;\n", tmp_path, "s.nex")
    alpha = [line for line in output(it).splitlines() if line.strip().startswith("alpha")][0]
    return alpha, (tmp_path / "d.pstat").read_text().splitlines()[-1]


def test_constant_in_a_later_run_prints_minus_nan(tmp_path, monkeypatch):
    screen, row = _sump(tmp_path, monkeypatch, constant_in=2)
    fields = screen.split()        # alpha mean variance lower upper median minESS avgESS PSRF
    assert fields[6] != "NA" and fields[7] == "-nan"
    assert row.split("\t")[7] == "-nan" and len(row.split("\t")) == STAT_COLUMNS


def test_constant_in_the_first_run_prints_na(tmp_path, monkeypatch):
    screen, row = _sump(tmp_path, monkeypatch, constant_in=1)
    assert screen.split()[6:8] == ["NA", "NA"]
    assert row.split("\t")[5].endswith("NANA")     # MrBayes writes NA without the tab before it


def test_c_spelling_of_nan_follows_its_sign():
    with np.errstate(invalid="ignore"):
        zero_by_zero = float(np.float64(0.0) / np.float64(0.0))
    assert c_fixed(zero_by_zero, 8, 2) == "    -nan" and mb_num(zero_by_zero, True, 6) == "-nan"
    assert c_fixed(float("nan"), 8, 2) == "     nan" and c_fixed(1.5, 8, 2) == "    1.50"
    assert mb_num(float("inf"), True, 6) == "inf" and mb_num(-float("inf"), False, 6) == "-inf"


@pytest.mark.parametrize("constant_in", [1, 2])
def test_matches_mrbayes(tmp_path, monkeypatch, mb_double, constant_in):
    """The real MrBayes on the same .p files: the same statistics rows in .pstat."""
    _, ours = _sump(tmp_path, monkeypatch, constant_in)
    (tmp_path / "s.nex").write_text("#NEXUS\nbegin mrbayes;\n sump filename=d nruns=2;\nend;\n")
    subprocess.run([str(mb_double), "s.nex"], cwd=tmp_path, capture_output=True, timeout=120, check=True)
    assert (tmp_path / "d.pstat").read_text().splitlines()[-1] == ours
