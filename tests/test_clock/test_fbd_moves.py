"""AddBranch(V) / DelBranch(V) (mbgpu.clock.fbd_moves) on a fixed tree with two fossil tips: the chain of
these two moves alone visits sampled ancestors and fossil-tip branch lengths with the probabilities the
fossilized birth-death prior gives (integrated numerically from mbgpu.clock.fossilized), as mb-double's
`mcmc data=no` with the same moves does; with the FBD rate moves on as well, the rates and prop_ancfossil
are sampled as by mb-double."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from scipy import integrate, stats

from mbgpu.clock import fbd_moves as fm
from mbgpu.clock.distributions import FIXED, GAMMA_MEAN_SD, UNIFORM, ln_lognormal_pdf
from mbgpu.clock.fbd_moves import add_branch, del_branch
from mbgpu.clock.fossilized import ln_fossilized_bd
from mbgpu.clock.param_moves import (CLOCKRATE_LAMBDA, EXTINCTION_DELTA, FOSSILIZATION_DELTA, SPECIATION_LAMBDA, SPECIATION_MAX,
                                     SPECIATION_MIN, clock_rate_multiplier, extinction_slider, fossilization_slider, speciation_multiplier)
from mbgpu.clock.rooted import children
from mbgpu.core import rng
from tests.test_clock.test_param_moves import compile_kernels, jit_with, run_mrbayes, seed, two_sample_ok
from tests.test_clock.trees import T1, TAXA, arrays

numba = pytest.importorskip("numba")


def _ones(parent):
    """The kernels' relaxed-rate array for a strict clock (scratch)."""
    return np.ones(parent.shape[0])


# T1 with Homo sapiens a fossil 0.02 deep (sister Pan, parent 0.05 deep, grandparent 0.07) and Macaca
# fuscata 0.01 deep (sister M. mulatta, parent 0.03, grandparent 0.06); clock rate 0.02: ages 1.0 and 0.5
TF = T1.replace("Homo_sapiens:0.05", "Homo_sapiens:0.03").replace("Macaca_fuscata:0.03", "Macaca_fuscata:0.02")
FOSSILS = (TAXA.index("Homo_sapiens"), TAXA.index("Macaca_fuscata"))
RATE = 0.02
FOSSIL_CMDS = ("prset brlenspr=clock:fossilization clockratepr=fixed(0.02) nodeagepr=calibrated %s; "
               "calibrate Homo_sapiens=fixed(1.0) Macaca_fuscata=fixed(0.5);")
ADD, DEL, SPECIATION, EXTINCTION, FOSSILIZATION, CLOCKRATE = range(6)
NO_EVENTS = np.zeros(0, dtype=np.int64)
AGE_P = np.array([1.0, 1.0, 0.0])          # treeagepr Gamma(1,1) (mean, sd), the default


def tree():
    parent, depth, n_tips = arrays(TF, FOSSILS)
    return parent, children(parent), depth, n_tips


def _fbd_chain(s, weights, parent, kids, depth, n_tips, clock_rate, rates, shifts, n, thin, use_jacobian):
    """MH over the fossils' parent depths (and the FBD rates where their weights are > 0), moves picked
    by MrBayes' relative weights; target = the FBD prior with Exp(10) net_speciation and Beta(1,1) rates.
    `rates` = (net_speciation, relative_extinction, relative_fossilization per interval, oldest first) for the
    fossil-sampling rate shift times `shifts`; clock_rate[0] moves with weight weights[5] under
    clockratepr lognormal(ln 0.02, 0.3). Samples: (Homo's branch length, Macaca's, `rates`, clock rate, TH)."""
    cal_kind = np.full(parent.shape[0], -1)
    cal_min, cal_max = np.zeros(parent.shape[0]), np.full(parent.shape[0], math.inf)
    out = np.empty((n, 4 + rates.shape[0]))
    keep_d, keep_r = depth.copy(), rates.copy()
    fossilization = rates[2:]
    total = weights.sum()

    def target():
        rate = clock_rate[0]
        return (math.log(10.0) - 10.0 * rates[0] + ln_lognormal_pdf(math.log(RATE), 0.3, rate)
                + ln_fossilized_bd(parent, depth, n_tips, rate, rates[0], rates[1], fossilization, 1.0, 0,
                                   GAMMA_MEAN_SD, AGE_P, False, shifts))

    lp = target()
    for i in range(n):
        for _ in range(thin):
            keep_d[:] = depth
            keep_r[:] = rates
            old_rate = clock_rate[0]
            rate = clock_rate[0]
            u = rng.uniform(s) * total
            move = 0
            while u > weights[move]:
                u -= weights[move]
                move += 1
            if move == ADD:
                r = add_branch(s, parent, kids, depth, n_tips, rate, cal_kind, cal_min, cal_max, GAMMA_MEAN_SD,
                               0.0, math.inf, np.ones(parent.shape[0]))
                if not use_jacobian and r > -math.inf:
                    r += math.log(rate)
            elif move == DEL:
                r = del_branch(s, parent, kids, depth, n_tips, rate, cal_kind, cal_min, cal_max, GAMMA_MEAN_SD,
                               0.0, math.inf, np.ones(parent.shape[0]))
                if not use_jacobian and r > -math.inf:
                    r -= math.log(rate)
            elif move == SPECIATION:
                r = speciation_multiplier(s, rates[0:1], SPECIATION_LAMBDA, SPECIATION_MIN, SPECIATION_MAX)
            elif move == EXTINCTION:
                r = extinction_slider(s, rates[1:2], EXTINCTION_DELTA)
            elif move == FOSSILIZATION:
                r = fossilization_slider(s, fossilization, FOSSILIZATION_DELTA)
            else:
                r = clock_rate_multiplier(s, clock_rate, parent, depth, CLOCKRATE_LAMBDA, NO_EVENTS)
            new = target() if r > -math.inf else -math.inf
            if math.log(rng.uniform(s)) < new - lp + r:
                lp = new
            else:
                depth[:] = keep_d
                rates[:] = keep_r
                clock_rate[0] = old_rate
        out[i, 0] = depth[parent[FOSSIL_HOMO]] - depth[FOSSIL_HOMO]
        out[i, 1] = depth[parent[FOSSIL_MACACA]] - depth[FOSSIL_MACACA]
        out[i, 2:2 + rates.shape[0]] = rates
        out[i, -2], out[i, -1] = clock_rate[0], depth.max()
    return out


FOSSIL_HOMO, FOSSIL_MACACA = FOSSILS


@pytest.fixture(scope="module")
def chain():
    return jit_with(_fbd_chain, compile_kernels())


def run_ours(chain, weights, rates, k, n=4000, thin=20, use_jacobian=True, shifts=()):
    parent, kids, depth, n_tips = tree()
    weights = list(weights) + [0.0] * (6 - len(weights))
    return chain(seed(k), np.array(weights, dtype=np.float64), parent, kids, depth, n_tips, np.array([RATE]),
                 np.array(rates, dtype=np.float64), np.array(shifts, dtype=np.float64), n, thin, use_jacobian)


def fossil_law(tip: int, rates=(0.1, 0.9, 0.1)):
    """(probability that fossil `tip` is a sampled ancestor, cdf of its branch length given it is not)
    under the FBD prior with the other depths fixed: a point mass and a density of its parent's age."""
    parent, _, depth, n_tips = tree()
    q = parent[tip]

    def ln_f(x):
        d = depth.copy()
        d[q] = x
        return ln_fossilized_bd(parent, d, n_tips, RATE, rates[0], rates[1], np.array([rates[2]]), 1.0, 0,
                                GAMMA_MEAN_SD, AGE_P, False)

    f0 = ln_f(depth[tip])
    lo, hi = depth[tip], depth[parent[q]]

    def mass(b):
        return integrate.quad(lambda x: math.exp(ln_f(x) - f0) / RATE, lo, lo + b)[0]

    total = mass(hi - lo)
    return 1.0 / (1.0 + total), np.vectorize(lambda b: mass(min(max(b, 0.0), hi - lo)) / total)


def check_against_law(lengths: np.ndarray, tip: int, label: str):
    p_sa, cdf = fossil_law(tip)
    n = lengths.size
    assert abs(np.mean(lengths == 0.0) - p_sa) < 4.5 * math.sqrt(p_sa * (1 - p_sa) / n), (label, p_sa)
    assert stats.kstest(lengths[lengths > 0.0], cdf).pvalue > 1e-3, label


@pytest.mark.parametrize("tip", [0, 1])
def test_add_and_delete_sample_the_fbd_prior(chain, tip):
    out = run_ours(chain, [15, 15, 0, 0, 0], [0.1, 0.9, 0.1], 11)
    check_against_law(out[:, tip], FOSSILS[tip], "ours")


def test_dropping_the_jacobian_is_seen(chain):
    """Without log((hi - lo) / clock rate)'s 1/rate the sampled-ancestor frequency is far off."""
    out = run_ours(chain, [15, 15, 0, 0, 0], [0.1, 0.9, 0.1], 12, n=1000, use_jacobian=False)
    p_sa, _ = fossil_law(FOSSIL_HOMO)
    assert abs(np.mean(out[:, 0] == 0.0) - p_sa) > 0.2


def fossil_lengths(t_text: str) -> np.ndarray:
    """(samples, 2) branch lengths of Homo sapiens and Macaca fuscata in MrBayes' .t trees."""
    number = {name: re.search(r"\s(\d+) %s[,;]" % name, t_text).group(1) for name in ("Homo_sapiens", "Macaca_fuscata")}
    rows = []
    for line in t_text.splitlines():
        if line.strip().startswith("tree gen."):
            rows.append([float(re.search(r"[(,]%s:([0-9.eE+-]+)" % number[name], line).group(1))
                         for name in ("Homo_sapiens", "Macaca_fuscata")])
    return np.array(rows)


def test_add_and_delete_like_mrbayes(mb_double, tmp_path):
    """mb-double with only AddBranch(V) and DelBranch(V) on (FBD rates fixed): prop_ancfossil and the
    fossils' branch lengths follow the same law as ours."""
    p, t = run_mrbayes(mb_double, tmp_path, FOSSIL_CMDS % "speciationpr=fixed(0.1) extinctionpr=fixed(0.9) "
                       "fossilizationpr=fixed(0.1)", TF, ["AddBranch(V)", "DelBranch(V)"], 40000, 10)
    lengths = fossil_lengths(t)[1:]
    np.testing.assert_allclose(p["prop_ancfossil"][1:], np.mean(lengths == 0.0, axis=1))
    for k, tip in enumerate(FOSSILS):
        check_against_law(lengths[:, k], tip, "mb-double")


def test_fbd_rates_and_sampled_ancestors_like_mrbayes(chain, mb_double, tmp_path):
    """AddBranch, DelBranch and the three FBD rate moves (default priors): net_speciation,
    relative_extinction, relative_fossilization and prop_ancfossil sampled as by mb-double."""
    ours = run_ours(chain, [15, 15, 3, 3, 3], [0.1, 0.9, 0.1], 13, n=4000, thin=200)
    p, _ = run_mrbayes(mb_double, tmp_path, FOSSIL_CMDS % "", TF,
                       ["AddBranch(V)", "DelBranch(V)", "Multiplier(Net_speciation)", "Slider(Relative_extinction)",
                        "Slider(Relative_fossilization)"], 400000, 100)
    two_sample_ok(ours[:, 2], p["net_speciation"][1:], "net_speciation")
    two_sample_ok(ours[:, 3], p["relative_extinction"][1:], "relative_extinction")
    two_sample_ok(ours[:, 4], p["relative_fossilization"][1:], "relative_fossilization")
    ours_sa = np.mean(ours[:, :2] == 0.0, axis=1)
    two_sample_ok(ours_sa, p["prop_ancfossil"][1:], "prop_ancfossil")


def test_fossilization_with_rate_shifts_like_mrbayes(chain, mb_double, tmp_path):
    """`samplestrat=random 2: 20 5` (three fossil-sampling intervals): Slider(Relative_fossilization) changes
    one of the three values at a time; with AddBranch/DelBranch on, the three values and prop_ancfossil are
    sampled as by mb-double (whose .p header has one name too many here: read by position)."""
    ours = run_ours(chain, [15, 15, 0, 0, 3], [0.1, 0.9, 0.1, 0.1, 0.1], 14, n=4000, thin=200, shifts=(20.0, 5.0))
    p, _ = run_mrbayes(mb_double, tmp_path, FOSSIL_CMDS % "speciationpr=fixed(0.1) extinctionpr=fixed(0.9) "
                       "samplestrat=random 2: 20 5", TF, ["AddBranch(V)", "DelBranch(V)", "Slider(Relative_fossilization)"],
                       400000, 100)
    rows = p["_rows"][1:]
    first = list(p).index("prop_ancfossil") + 1
    for k in range(3):
        two_sample_ok(ours[:, 4 + k], rows[:, first + k], "relative_fossilization %d" % (k + 1))
    two_sample_ok(np.mean(ours[:, :2] == 0.0, axis=1), p["prop_ancfossil"][1:], "prop_ancfossil")


def test_clock_rate_with_sampled_ancestors_like_mrbayes(chain, mb_double, tmp_path):
    """Multiplier(Clockrate) (clockratepr lognormal(ln 0.02, 0.3)) beside AddBranch/DelBranch: sampled
    ancestors keep their zero-length branches, the ages stay, and clock rate, TH and prop_ancfossil are
    sampled as by mb-double."""
    ours = run_ours(chain, [15, 15, 0, 0, 0, 3], [0.1, 0.9, 0.1], 15, n=4000, thin=100)
    p, _ = run_mrbayes(mb_double, tmp_path, FOSSIL_CMDS.replace("fixed(0.02)", "lognormal(%r,0.3)" % math.log(RATE))
                       % "speciationpr=fixed(0.1) extinctionpr=fixed(0.9) fossilizationpr=fixed(0.1)", TF,
                       ["AddBranch(V)", "DelBranch(V)", "Multiplier(Clockrate)"], 200000, 50)
    two_sample_ok(ours[:, -2], p["clockrate"][1:], "clockrate")
    two_sample_ok(ours[:, -1], p["TH"][1:], "TH")
    two_sample_ok(np.mean(ours[:, :2] == 0.0, axis=1), p["prop_ancfossil"][1:], "prop_ancfossil")
    assert stats.kstest(ours[:, -2], stats.lognorm(0.3, scale=RATE).cdf).pvalue > 1e-3


def test_counts_and_aborts():
    """Candidates are fossils only; a fixed-age parent node, or a sister older than the fossil, aborts."""
    parent, kids, depth, n_tips = tree()
    assert fm.fossil_counts(parent, depth, n_tips) == (0, 2)
    no_cal = np.full(parent.size, -1), np.zeros(parent.size), np.full(parent.size, math.inf)
    s = seed(3)
    before = depth.copy()
    r = del_branch(s, parent, kids, depth, n_tips, RATE, *no_cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent))
    assert r > -math.inf and fm.fossil_counts(parent, depth, n_tips) == (1, 1)
    assert add_branch(s, parent, kids, depth, n_tips, RATE, *no_cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)) > -math.inf
    assert fm.fossil_counts(parent, depth, n_tips) == (0, 2)
    depth[:] = before
    kinds, lows, highs = no_cal
    kinds[parent[list(FOSSILS)]] = 0                                   # fixed-age parents
    lows[parent[list(FOSSILS)]] = highs[parent[list(FOSSILS)]] = depth[parent[list(FOSSILS)]] / RATE
    assert del_branch(s, parent, kids, depth, n_tips, RATE, kinds, lows, highs, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)) == -math.inf
    np.testing.assert_array_equal(depth, before)
    hylobates = TAXA.index("Hylobates")                                # 0.10 deep, sister (apes) 0.12 deep
    parent, depth, _ = arrays(T1.replace("Hylobates:0.18", "Hylobates:0.08"), (hylobates,))
    kids, before = children(parent), depth.copy()
    assert fm.fossil_counts(parent, depth, n_tips) == (0, 1)
    no_cal = np.full(parent.size, -1), np.zeros(parent.size), np.full(parent.size, math.inf)
    assert del_branch(s, parent, kids, depth, n_tips, RATE, *no_cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)) == -math.inf
    np.testing.assert_array_equal(depth, before)


def test_relaxed_rates_follow_move_add_and_del_branch():
    """Move_AddBranch (proposal.c): the fossil leaving its sampled-ancestor place takes its parent's rate,
    `igrRate[p->index] = igrRate[q->index]` (tk02 alike), nothing else changes; Move_DelBranch leaves
    every rate (its `igrRate[p->index] = igrRate[q->index]` is commented out). The prior-sampling test
    (test_chain_fbd_relaxed, tk02) is the oracle check; igr's distribution hardly feels the copy."""
    parent, kids, depth, n_tips = tree()
    no_cal = np.full(parent.size, -1), np.zeros(parent.size), np.full(parent.size, math.inf)
    rates = np.linspace(0.5, 1.5, parent.size)
    s = seed(3)
    assert del_branch(s, parent, kids, depth, n_tips, RATE, *no_cal, GAMMA_MEAN_SD, 0.0, math.inf, rates) > -math.inf
    np.testing.assert_array_equal(rates, np.linspace(0.5, 1.5, parent.size))
    (p,) = [v for v in FOSSILS if depth[parent[v]] == depth[v]]                  # now a sampled ancestor
    before = rates.copy()
    assert add_branch(s, parent, kids, depth, n_tips, RATE, *no_cal, GAMMA_MEAN_SD, 0.0, math.inf, rates) > -math.inf
    assert depth[parent[p]] > depth[p] and rates[p] == before[parent[p]] != before[p]
    np.testing.assert_array_equal(np.delete(rates, p), np.delete(before, p))


def test_compiled_equal_interpreted():
    jitted = compile_kernels()
    parent, kids, depth, n_tips = tree()
    cal = np.full(parent.size, -1), np.zeros(parent.size), np.full(parent.size, math.inf)
    a, b = depth.copy(), depth.copy()
    assert jitted["del_branch"](seed(4), parent, kids, a, n_tips, RATE, *cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)) == \
        pytest.approx(del_branch.py_func(seed(4), parent, kids, b, n_tips, RATE, *cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)), abs=1e-12)
    assert jitted["add_branch"](seed(5), parent, kids, a, n_tips, RATE, *cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)) == \
        pytest.approx(add_branch.py_func(seed(5), parent, kids, b, n_tips, RATE, *cal, GAMMA_MEAN_SD, 0.0, math.inf, _ones(parent)), abs=1e-12)
    np.testing.assert_array_equal(a, b)


def test_depth_window_at_the_root_and_under_calibrations():
    """The parent's window: up to TREEHEIGHT_MAX at an undated root, cut at the tree-age prior's maximum
    (× clock rate), empty when its minimum is above the fossil or the node has a fixed calibration."""
    parent, depth, _ = arrays(T1.replace("Tarsius_syrichta:0.65", "Tarsius_syrichta:0.55"), (0,))   # 0.1 deep
    root = parent[0]
    none = np.full(parent.size, -1), np.zeros(parent.size), np.full(parent.size, math.inf)
    lo, hi = fm._depth_window(0, root, parent, depth, 0.5, *none, GAMMA_MEAN_SD, 0.0, math.inf)
    assert (lo, hi) == (depth[0] + fm.BRLENS_MIN, fm.TREEHEIGHT_MAX)
    assert fm._depth_window(0, root, parent, depth, 0.5, *none, UNIFORM, 0.1, 1.0) == (depth[0] + fm.BRLENS_MIN, 0.5)
    assert fm._depth_window(0, root, parent, depth, 0.5, *none, UNIFORM, 0.3, 1.0) == (1.0, 0.0)
    kinds, lows, highs = none
    kinds[root], lows[root], highs[root] = UNIFORM, 0.1, 4.0            # a dated root: its calibration
    assert fm._depth_window(0, root, parent, depth, 0.5, kinds, lows, highs, UNIFORM, 0.1, 1.0)[1] == 2.0
    kinds[root] = FIXED
    assert fm._depth_window(0, root, parent, depth, 0.5, kinds, lows, highs, UNIFORM, 0.1, 1.0) == (1.0, 0.0)
