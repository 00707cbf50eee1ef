"""MrBayes' PSRF, ESS and ASDSF against MrBayes' own output files (primates_gtrig_20k, sim12_hky_g4)."""
import math

import numpy as np
import pytest

from mbgpu.diagnostics import asdsf_msdsf, ess, min_count, psrf, split_stddevs
from mbgpu.output.tfile import read_tfile
from mbgpu.splits import SplitCounter, nested_splits
from mbgpu.summary.pfile import read_pfile

PRIM = "mrbayes/reference_runs/primates_gtrig_20k/primates.nex"


def _pstat(path):
    with open(path) as fh:
        rows = [l.rstrip("\n").split("\t") for l in fh][2:]
    return {r[0]: [float(v) for v in r[1:]] for r in rows}


@pytest.mark.parametrize("stem,nruns", [(PRIM, 2), ("mrbayes/reference_runs/sim12_hky_g4/sim12_hky_g4", 4)])
def test_psrf_and_ess_match_pstat(shared_data, stem, nruns):
    files = [read_pfile(str(shared_data / (stem + ".run%d.p" % k))) for k in range(1, nruns + 1)]
    drop = int(0.25 * files[0].rows.shape[0])
    ref = _pstat(str(shared_data / (stem + ".pstat")))
    for name, vals in ref.items():
        runs = [f.column(name)[drop:] for f in files]
        esses = [ess(r) for r in runs]
        assert "%.6e" % psrf(runs) == "%.6e" % vals[7]
        assert "%.6e" % min(esses) == "%.6e" % vals[5]
        assert "%.6e" % (sum(esses) / nruns) == "%.6e" % vals[6]


def test_asdsf_from_reference_trees_matches_mcmc_file(shared_data):
    ts = [read_tfile(str(shared_data / (PRIM + ".run%d.t" % k))) for k in (1, 2)]
    n = len(ts[0].taxa)
    counter = SplitCounter(2, n, minpartfreq=0.10, burninfrac=0.25)
    got = {}
    for i in range(len(ts[0].trees)):
        for r in range(2):
            counter.add(r, nested_splits(ts[r].trees[i].topology, n))
        gen = int(ts[0].trees[i].name.split(".")[1])
        if gen and gen % 1000 == 0:
            got[gen] = "%f" % counter.asdsf()[0]
    with open(str(shared_data / (PRIM + ".mcmc"))) as fh:
        mcmc = [l.split("\t") for l in fh if l[:1].isdigit()]
    want = {int(r[0]): r[-1].strip() for r in mcmc}
    assert got == want
    assert want[20000] == "0.000000" and want[5000] == "0.006044"


def test_psrf_properties():
    rng = np.random.default_rng(1)
    same = [rng.normal(size=500) for _ in range(4)]
    assert 0.99 < psrf(same) < 1.01
    apart = [rng.normal(size=500) + 5 * k for k in range(2)]
    assert psrf(apart) > 3
    assert np.isnan(psrf([np.ones(10), np.ones(10)]))


def test_psrf_with_a_run_of_one_sample_is_mrbayes():
    """MrBayes divides by count-1 = 0 in C: after a run with spread the sum is +inf and the PSRF
    sqrt((w-1)/w) (w: samples per run); first, or after runs without spread, 0/0 gives NA. The value is
    MrBayes' .vstat entry for such a split (9.636241e-01 with 27 and 1 samples)."""
    assert psrf([[1.0, 2.0, 3.0] * 9, [1.5]]) == pytest.approx(math.sqrt(13 / 14), abs=0) and \
        "%e" % psrf([[1.0, 2.0, 3.0] * 9, [1.5]]) == "9.636241e-01"
    assert np.isnan(psrf([[1.5], [1.0, 2.0, 3.0]]))


def test_ess_of_iid_and_correlated_samples():
    rng = np.random.default_rng(2)
    x = rng.normal(size=4000)
    assert 3000 < ess(x) < 5000
    ar = np.zeros(4000)
    for i in range(1, 4000):
        ar[i] = 0.9 * ar[i - 1] + rng.normal()
    assert ess(ar) < 600


def test_split_stddev_convention():
    # freq (1,1,1-x,1-x) over 4 runs: sample std dev x/sqrt(3) (MrBayes' (n-1) convention)
    x = 1 / 2251
    sd = split_stddevs([[2251, 2251, 2250, 2250]], 2251)
    assert sd[0] == pytest.approx(x / np.sqrt(3), rel=1e-12)
    assert "%.6e" % sd[0] == "2.564861e-04"          # sim12 .tstat, split 18
    assert min_count(0.10, 30) == 3 and min_count(0.10, 31) == 4
    avg, mx = asdsf_msdsf([[10, 0], [5, 5], [0, 1]], 10)
    assert avg == pytest.approx((np.sqrt(0.5) + np.sqrt(0.005)) / 3) and mx == pytest.approx(np.sqrt(0.5))


def test_clock_tree_split_frequencies_are_rooted_clades(mb_double, tmp_path):
    """A clock run's ASDSF counts the rooted clades (a clade and its complement differ; the root's own is
    not counted): computed from mb-double's own .t files, it equals its .mcmc column at every diagnfreq;
    the unrooted splits would give another value."""
    import shutil
    import subprocess

    from mbgpu.splits import nested_clades
    from tests.conftest import TEST_DATA

    shutil.copy(TEST_DATA / "primates.nex", tmp_path / "primates.nex")
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=3 swapseed=3; execute primates.nex;\n lset nst=1 rates=equal;\n"
        "prset brlenspr=clock:uniform treeagepr=gamma(0.3,0.1);\n"
        "mcmc ngen=20000 samplefreq=50 diagnfreq=2000 printfreq=20000 nchains=1 filename=x;\nend;\n")
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    ts = [read_tfile(str(tmp_path / ("x.run%d.t" % k))) for k in (1, 2)]
    n = len(ts[0].taxa)
    rooted, unrooted = (SplitCounter(2, n, minpartfreq=0.10, burninfrac=0.25) for _ in range(2))
    got, other = {}, {}
    for i in range(len(ts[0].trees)):
        for r in range(2):
            rooted.add(r, nested_clades(ts[r].trees[i].topology, n))
            unrooted.add(r, nested_splits(ts[r].trees[i].topology, n))
        gen = int(ts[0].trees[i].name.split(".")[1])
        if gen and gen % 2000 == 0:
            got[gen], other[gen] = "%f" % rooted.asdsf()[0], "%f" % unrooted.asdsf()[0]
    with open(str(tmp_path / "x.mcmc")) as fh:
        want = {int(r[0]): r[-1].strip() for r in (l.split("\t") for l in fh if l[:1].isdigit())}
    assert got == want
    assert other != want
