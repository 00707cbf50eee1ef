"""`ss` (stepping-stone marginal likelihood) of a clock tree: mbgpu's estimate agrees with MrBayes'
(mb-double) on the same 4-taxon data under a strict clock, within the Monte Carlo error of their runs."""
from __future__ import annotations

import math
import statistics

import pytest

from tests.test_sampler.test_stepping_stone import _run_estimates, _run_mb, _run_mbgpu

MODEL = ("lset nst=1 rates=equal;\n prset statefreqpr=fixed(equal) brlenspr=clock:uniform treeagepr=gamma(0.2,0.1) "
         "clockratepr=fixed(1);\n")


@pytest.mark.slow
def test_clock_ss_estimate_agrees_with_mrbayes(mb_double, tmp_path, monkeypatch):
    settings = "ss ngen=20000 samplefreq=10 printfreq=20000 nchains=1 nsteps=10 diagnfreq=20000"
    theirs = _run_estimates(_run_mb(mb_double, tmp_path / "mb", " set seed=11 swapseed=12;\n " + MODEL + " "
                                    + settings + " nruns=8;\n"))
    mine = _run_estimates(_run_mbgpu(tmp_path / "ours", " set seed=11 swapseed=12;\n " + MODEL + " " + settings
                                     + " nruns=4;\n", monkeypatch))
    assert len(theirs) == 8 and len(mine) == 4
    se = lambda xs: max(statistics.stdev(xs) / math.sqrt(len(xs)), 0.01)  # noqa
    m1, m2 = statistics.mean(mine), statistics.mean(theirs)
    print("mbgpu %.4f +- %.4f   MrBayes %.4f +- %.4f" % (m1, se(mine), m2, se(theirs)))
    assert abs(m1 - m2) < 4 * math.hypot(se(mine), se(theirs)), (mine, theirs)
