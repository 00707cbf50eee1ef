"""`mcmc` under the igr and tk02 relaxed clocks against mb-double: the Gen-0 `.p` row and `.t` file up to
gen.0 (effective lengths as `[&B IgrBrlens x]`), prior sampling (`data=no`: igrvar / tk02var, TH, TL) and a
posterior run on primates (TH, TL, igrvar, clockrate, LnL means within Monte Carlo error), so that the
branch-rate moves, the tree moves' relaxed-clock side effects and the likelihood's effective lengths are
checked through the whole run path."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.test_clock.gen0 import SETUP
from tests.test_clock.test_chain_gen0 import _file, _gen0, _run_both, _trees_to_gen0
from tests.test_clock.test_chain_sampling import Z_MAX, _check_means, _runs
from tests.test_clock.trees import T1, T2

UNIFORM = "prset brlenspr=clock:uniform"
EFF = re.compile(r"\[&B \w+ ([-+.0-9eE]+)\]")
GEN0 = {
    "igr": (SETUP, UNIFORM + " clockvarpr=igr;", T1),
    "igr_uniform_variance": (SETUP, UNIFORM + " clockvarpr=igr igrvarpr=uniform(0.5,2) clockratepr=exponential(2);",
                             T2),
    "igr_hky": ("lset nst=2 rates=gamma;", "prset brlenspr=clock:birthdeath clockvarpr=igr igrvarpr=exponential(5);",
                T1),
    "tk02": (SETUP, UNIFORM + " clockvarpr=tk02;", T1),
    "tk02_fixed_format": ("set scientific=no precision=10; " + SETUP, UNIFORM + " clockvarpr=tk02 "
                          "clockratepr=lognormal(-1,0.5);", T2),
}


@pytest.mark.parametrize("case", sorted(GEN0))
def test_gen0_row_and_tree_equal_mrbayes(case, mb_double, tmp_path, monkeypatch):
    text = _file(*GEN0[case])
    _run_both(text, mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    if "uniform" not in case:                        # a drawn variance: ours is drawn from our stream
        assert our_row == pytest.approx(row, rel=1e-6)
        assert _trees_to_gen0(tmp_path / "ours" / "x.t") == _trees_to_gen0(tmp_path / "mb" / "x.t")
    else:
        assert our_row[1] == pytest.approx(row[1], rel=1e-6)           # LnL reads the effective lengths
        assert len(_trees_to_gen0(tmp_path / "ours" / "x.t")) == len(_trees_to_gen0(tmp_path / "mb" / "x.t"))


# name -> (commands, start tree, generations, columns compared); effTL: the summed effective lengths of the .t
PRIOR = {
    # the variances and the rates mix slowly (autocorrelation 0.15 at 6000 generations): long runs, and a
    # uniform variance prior away from MrBayes' RATE_MIN / RELBRLENS_MIN truncation
    "igr": (SETUP + UNIFORM + " clockvarpr=igr igrvarpr=uniform(0.02,0.1) treeagepr=gamma(0.5,0.2);", T1, 200000,
            ("TH", "TL", "igrvar", "effTL")),
    "tk02": (SETUP + UNIFORM + " clockvarpr=tk02 tk02varpr=uniform(0.5,2) treeagepr=gamma(0.5,0.2);", T1, 200000,
             ("TH", "TL", "tk02var", "effTL")),
}
# igrvar mixes slowly in both programs (one run's batch means understate its error several times: mb-double's
# means over 6 seeds of 100k generations ranged 0.0024-0.0095, benchmarks/clock_prior_long.py --data), so the
# posterior is compared over SEEDS runs of each program, with the spread of the runs' means as the error;
# a free clock rate (a ridge with the tree age) is fixed here
POSTERIOR = {
    "igr_hky": ("lset nst=2 rates=gamma; " + UNIFORM + " clockvarpr=igr clockratepr=fixed(0.3);", T1, 40000,
                ("LnL", "TH", "TL", "igrvar", "effTL")),
}
SEEDS = 4


def _with_effective_lengths(out: dict) -> dict:
    """Each run's .p table with `effTL`: per sample the sum of the .t file's `[&B NAME x]` values."""
    for table, tpath in out.values():
        lines = [ln for ln in tpath.read_text().splitlines() if ln.startswith("   tree gen.")]
        totals = np.array([sum(float(x) for x in EFF.findall(ln)) for ln in lines])
        table["effTL"] = totals[len(totals) // 10:][:len(table["TH"])]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PRIOR))
def test_prior_sampling_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    commands, newick, ngen, columns = PRIOR[case]
    _check_means(_with_effective_lengths(_runs(tmp_path, monkeypatch, mb_double, commands, newick, ngen, False)),
                 columns)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(POSTERIOR))
def test_posterior_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    compare_over_seeds(tmp_path, monkeypatch, mb_double, POSTERIOR[case], True)


def compare_over_seeds(tmp_path, monkeypatch, mb_double, case: tuple, data: bool) -> np.ndarray:
    """Both programs run SEEDS times on `case` (commands, start tree, generations, columns); asserts their
    means of each column agree within Z_MAX standard errors of the difference (from the spread of the runs'
    means); returns mbgpu's means."""
    commands, newick, ngen, columns = case
    means = {"mb": [], "ours": []}
    for seed in range(1, SEEDS + 1):
        folder = tmp_path / str(seed)
        folder.mkdir()
        seeded = "set seed=%d swapseed=%d; %s" % (seed, seed, commands)
        out = _with_effective_lengths(_runs(folder, monkeypatch, mb_double, seeded, newick, ngen, data))
        for who, (table, _) in out.items():
            means[who].append([table[col].mean() for col in columns])
    a, b = np.array(means["mb"]), np.array(means["ours"])
    se = np.hypot(a.std(axis=0, ddof=1), b.std(axis=0, ddof=1)) / np.sqrt(SEEDS)
    z = (a.mean(axis=0) - b.mean(axis=0)) / se
    assert np.all(np.abs(z) < Z_MAX), dict(zip(columns, zip(a.mean(axis=0), b.mean(axis=0), z)))
    return b.mean(axis=0)


@pytest.mark.gpu
def test_gpu_run_equals_cpu_run(tmp_path, monkeypatch):
    """An igr clock run on the GPU likelihood follows the CPU run: same seed, same states, LnL to 1e-6 at
    every sample (the likelihood reads the effective branch lengths on both)."""
    gpu_equals_cpu(tmp_path, monkeypatch, "clockvarpr=igr")


def gpu_equals_cpu(tmp_path, monkeypatch, clock: str) -> list:
    """Asserts that a 400-generation birth-death run with `clock` on the GPU likelihood gives the CPU run's
    .p rows (to 1e-6); returns them."""
    from tests.helpers import interp_for
    from tests.test_clock.trees import DATA
    import shutil

    rows = {}
    for backend in ("cpu", "gpu"):
        folder = tmp_path / backend
        folder.mkdir()
        shutil.copy(DATA, folder / "primates.nex")
        monkeypatch.chdir(folder)
        interp_for("#NEXUS\nbegin mrbayes; set seed=9 swapseed=9 backend=%s; execute primates.nex;\n lset nst=2 "
                   "rates=gamma; prset brlenspr=clock:birthdeath %s clockratepr=lognormal(-2,1);\n"
                   "mcmc ngen=400 samplefreq=50 printfreq=400 nruns=1 nchains=2 checkpoint=no filename=g;\nend;\n"
                   % (backend, clock), folder, "g.nex")
        rows[backend] = [[float(x) for x in ln.split("\t")] for ln in (folder / "g.p").read_text().splitlines()[2:]]
    assert len(rows["cpu"]) == len(rows["gpu"]) == 9
    for a, b in zip(rows["cpu"], rows["gpu"]):
        assert b == pytest.approx(a, rel=1e-6, abs=1e-6)
    return rows["cpu"]
