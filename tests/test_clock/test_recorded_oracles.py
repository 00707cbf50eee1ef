"""Every oracle number of docs/plans/clocks.md (Gen-0 LnPr that mb-double printed for the §0 set-up: JC,
fixed equal frequencies, so LnPr holds only the clock terms), recomputed from mbgpu.clock's functions.
MrBayes prints LnPr with 7 significant digits; each value must agree to its last printed digit."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mbgpu.clock import fossilized as fbd
from mbgpu.clock import relaxed
from mbgpu.clock import tree_priors as tp
from mbgpu.clock.distributions import age_distribution, clock_rate_distribution
from tests.test_clock.trees import APES, TREES, age_prior, arrays, flags, mrca

GAMMA11 = age_prior("gamma", 1, 1)                    # default treeagepr Gamma(1,1) = Exp(1)
EXP10_AT_01 = math.log(10) - 1.0                      # speciationpr / igrvarpr Exp(10) at start 0.1
ROOT = 22                                             # the root's node id in the 12-taxon trees


def uniform(tree, rate=1.0, age=GAMMA11, dated=(), locked=None):
    parent, depth, n = arrays(TREES[tree])
    dated = [mrca(parent, APES) if d == "apes" else d for d in dated]
    locked = dated if locked is None else locked
    return tp.ln_uniform(parent, depth, n, rate, age[0], age[1], flags(parent.size, dated),
                         flags(parent.size, locked))


def bd(tree, sr=0.1, er=0.9, f=1.0, strategy=tp.RANDOM, rate=1.0, root_dated=False):
    parent, depth, n = arrays(TREES[tree])
    return tp.ln_birth_death(parent, depth, n, rate, sr, er, f, strategy, *GAMMA11, root_dated)


def coal(tree, popsize, rate=1.0, growth=0.0):
    parent, depth, n = arrays(TREES[tree])
    return tp.ln_coalescent(parent, depth, n, tp.coalescent_theta(popsize, rate), growth)


def fossil(tree, f=1.0, strategy=tp.RANDOM):
    parent, depth, n = arrays(TREES[tree])
    return fbd.ln_fossilized_bd(parent, depth, n, 1.0, 0.1, 0.9, np.array([0.1]), f, strategy, *GAMMA11, False)


def branch_rates(tree, model, var):
    parent, depth, n = arrays(TREES[tree])
    ones = np.ones(parent.size)
    return (relaxed.ln_igr_rates if model == "igr" else relaxed.ln_tk02_rates)(parent, depth, ones, var)


def cpp(tree, cpp_rate):
    parent, depth, n = arrays(TREES[tree])
    return relaxed.ln_cpp_events(parent, depth, np.zeros(parent.size, int), np.zeros((parent.size, 1)), cpp_rate, 0.4)


def rate_prior(family, *params):
    return lambda x: clock_rate_distribution(family, params).ln_pdf(x)


def calib(family, *params):
    return lambda x: age_distribution(family, params).ln_pdf(x)


CASES = {
    # §1.2 clock:uniform
    "uni_def T1": (-11.10266, lambda: uniform("T1")),
    "uni_def T2": (-13.32906, lambda: uniform("T2")),
    "uni_def T3": (-18.68413, lambda: uniform("T3")),
    "uni_gam23 T1": (-11.71585, lambda: uniform("T1", age=age_prior("gamma", 2, 3))),
    "uni_gam23 T2": (-13.94093, lambda: uniform("T2", age=age_prior("gamma", 2, 3))),
    "uni_gam23 T3": (-19.17685, lambda: uniform("T3", age=age_prior("gamma", 2, 3))),
    "uni_unif T1": (-11.51737, lambda: uniform("T1", age=age_prior("uniform", 0.1, 3))),
    "uni_unif T2": (-13.59377, lambda: uniform("T2", age=age_prior("uniform", 0.1, 3))),
    "uni_unif T3": (-18.44884, lambda: uniform("T3", age=age_prior("uniform", 0.1, 3))),
    "uni_fix T1": (-10.45266, lambda: uniform("T1", age=age_prior("fixed", 0.65))),
    "uni_crln T1": (-12.02160, lambda: uniform("T1") + rate_prior("lognormal", 0, 1)(1.0)),
    "uni_crln T2": (-14.24799, lambda: uniform("T2") + rate_prior("lognormal", 0, 1)(1.0)),
    "uni_crln T3": (-19.60307, lambda: uniform("T3") + rate_prior("lognormal", 0, 1)(1.0)),
    "uni_crexp T1": (-18.99099, lambda: uniform("T1", 0.5) + rate_prior("exponential", 2)(0.5)),
    "uni_crexp T2": (-21.36738, lambda: uniform("T2", 0.5) + rate_prior("exponential", 2)(0.5)),
    "uni_crexp T3": (-27.22246, lambda: uniform("T3", 0.5) + rate_prior("exponential", 2)(0.5)),
    "uni_crnorm T1": (-11.30544, lambda: uniform("T1") + rate_prior("normal", 1, 0.5)(1.0)),
    "uni_crnorm T2": (-13.53183, lambda: uniform("T2") + rate_prior("normal", 1, 0.5)(1.0)),
    "uni_crnorm T3": (-18.88691, lambda: uniform("T3") + rate_prior("normal", 1, 0.5)(1.0)),
    "uni_crgam T1": (-18.60469, lambda: uniform("T1", 0.5) + rate_prior("gamma", 2, 4)(0.5)),
    "uni_crgam T2": (-20.98109, lambda: uniform("T2", 0.5) + rate_prior("gamma", 2, 4)(0.5)),
    "uni_crgam T3": (-26.83616, lambda: uniform("T3", 0.5) + rate_prior("gamma", 2, 4)(0.5)),
    "strict_moves T1": (-21.44534, lambda: uniform("T1", math.exp(-1)) + rate_prior("lognormal", -1, 0.5)(math.exp(-1))),
    # §1.3 clock:birthdeath (3.2.7a)
    "bd_def T1": (-3.342392, lambda: bd("T1") + EXP10_AT_01),
    "bd_def T2": (-4.292987, lambda: bd("T2") + EXP10_AT_01),
    "bd_def T3": (-7.107633, lambda: bd("T3") + EXP10_AT_01),
    "bd_f05 T1": (-14.32147, lambda: bd("T1", f=0.5) + EXP10_AT_01),
    "bd_f05 T2": (-13.81776, lambda: bd("T2", f=0.5) + EXP10_AT_01),
    "bd_f05 T3": (-13.77675, lambda: bd("T3", f=0.5) + EXP10_AT_01),
    "bd_div T1": (-45.75831, lambda: bd("T1", f=0.5, strategy=tp.DIVERSITY) + EXP10_AT_01),
    "bd_div T2": (-40.79867, lambda: bd("T2", f=0.5, strategy=tp.DIVERSITY) + EXP10_AT_01),
    "bd_div T3": (-41.53381, lambda: bd("T3", f=0.5, strategy=tp.DIVERSITY) + EXP10_AT_01),
    "bd_clu T1": (-41.79641, lambda: bd("T1", f=0.5, strategy=tp.CLUSTER) + EXP10_AT_01),
    "bd_clu T2": (-30.19765, lambda: bd("T2", f=0.5, strategy=tp.CLUSTER) + EXP10_AT_01),
    "bd_clu T3": (-44.68433, lambda: bd("T3", f=0.5, strategy=tp.CLUSTER) + EXP10_AT_01),
    "bd_fixed T1": (1.447895, lambda: bd("T1", 2, 0.5)),
    "bd_fixed T2": (-1.067151, lambda: bd("T2", 2, 0.5)),
    "bd_fixed T3": (-7.850455, lambda: bd("T3", 2, 0.5)),
    "tip_bd T4": (-3.342392, lambda: bd("T4") + EXP10_AT_01),          # tip ages are ignored
    # §1.4 clock:coalescence
    "coal_def T1": (-21.39360, lambda: coal("T1", 0.1) + EXP10_AT_01),
    "coal_def T2": (-36.24360, lambda: coal("T2", 0.1) + EXP10_AT_01),
    "coal_def T3": (-61.79360, lambda: coal("T3", 0.1) + EXP10_AT_01),
    "coal_fix T1": (-8.080000, lambda: coal("T1", 0.5)),
    "coal_fix T2": (-11.05000, lambda: coal("T2", 0.5)),
    "coal_fix T3": (-16.16000, lambda: coal("T3", 0.5)),
    # §1.5 clock:fossilization
    "fbd_def T1": (3.927881, lambda: fossil("T1") + EXP10_AT_01),
    "fbd_def T2": (2.891032, lambda: fossil("T2") + EXP10_AT_01),
    "fbd_def T3": (-0.2953376, lambda: fossil("T3") + EXP10_AT_01),
    "tip_fbd T4": (-6.041429, lambda: fossil("T4") + EXP10_AT_01),
    "tip_fbd5 T5": (-6.296312, lambda: fossil("T5") + EXP10_AT_01),
    "tip_fbd_ft T4": (-8.099200, lambda: fossil("T4", strategy=tp.FOSSILTIP) + EXP10_AT_01),
    "tip_fbd_div T4": (-41.85725, lambda: fossil("T4", 0.5, tp.DIVERSITY) + EXP10_AT_01),
    # §2 calibrations of 'apes' (age 0.18) on bd_fixed T1
    "cal fixed": (1.447895, lambda: bd("T1", 2, 0.5) + calib("fixed", 0.18)(0.18)),
    "cal uniform": (3.750480, lambda: bd("T1", 2, 0.5) + calib("uniform", 0.15, 0.25)(0.18)),
    "cal offsetexponential": (2.950480, lambda: bd("T1", 2, 0.5) + calib("offsetexponential", 0.1, 0.2)(0.18)),
    "cal truncatednormal": (3.467701, lambda: bd("T1", 2, 0.5) + calib("truncatednormal", 0.1, 0.2, 0.05)(0.18)),
    "cal lognormal": (3.598830, lambda: bd("T1", 2, 0.5) + calib("lognormal", 0.2, 0.05)(0.18)),
    "cal offsetlognormal": (3.776762, lambda: bd("T1", 2, 0.5) + calib("offsetlognormal", 0.1, 0.2, 0.05)(0.18)),
    "cal gamma": (3.539073, lambda: bd("T1", 2, 0.5) + calib("gamma", 0.2, 0.05)(0.18)),
    "cal offsetgamma": (3.634467, lambda: bd("T1", 2, 0.5) + calib("offsetgamma", 0.1, 0.2, 0.05)(0.18)),
    "root cal bd": (2.791042, lambda: bd("T1", 2, 0.5, root_dated=True) + calib("uniform", 0.5, 1.0)(0.65)),
    "root cal uniform": (-9.759514, lambda: uniform("T1", dated=[ROOT]) + calib("uniform", 0.5, 1.0)(0.65)),
    # §2 interior and tip calibrations under the uniform prior (§6 item 1: reproduced now)
    "calu_fixed": (-2.990968, lambda: uniform("T1", dated=["apes"])),
    "calu_uniform": (-0.6883829, lambda: uniform("T1", dated=["apes"]) + calib("uniform", 0.15, 0.25)(0.18)),
    "tip_uni T4": (-9.964498, lambda: uniform("T4", dated=[0, 1], locked=[])),
    "tip_uni5 T5": (-11.68760, lambda: uniform("T5", dated=[0, 1], locked=[])),    # ties: SetNodeDepths
    "tip_uni_u T4": (-7.661913, lambda: uniform("T4", dated=[0, 1], locked=[]) + calib("uniform", 0.05, 0.15)(0.1)),
    # §3 relaxed clocks on uni_def T1 (tk02: §6 item 2, reproduced now)
    "igr": (-34.54883, lambda: uniform("T1") + EXP10_AT_01 + branch_rates("T1", "igr", 0.1)),
    "igr exp2": (-60.14705, lambda: uniform("T1") + math.log(2) - 1.0 + branch_rates("T1", "igr", 0.5)),
    "mixed": (-34.54883, lambda: uniform("T1") + EXP10_AT_01 + branch_rates("T1", "igr", 0.1)),
    "cpp": (-13.94063, lambda: uniform("T1") + math.log(0.1) - 0.1 * 0.1683583 + cpp("T1", 0.1683583)),
    "cpp exp1": (-11.17135, lambda: uniform("T1") - 0.01683583 + cpp("T1", 0.01683583)),
    "tk02": (-13.16451, lambda: uniform("T1") - 2.0 + branch_rates("T1", "tk02", 2.0)),
    "tk02 exp2": (-5.146465, lambda: uniform("T1") + math.log(2) - 2.0 + branch_rates("T1", "tk02", 1.0)),
    "tk02 fixed 0.5": (3.618108, lambda: uniform("T1") + branch_rates("T1", "tk02", 0.5)),
    "tk02 fixed 1": (-3.839612, lambda: uniform("T1") + branch_rates("T1", "tk02", 1.0)),
    "tk02 fixed 2": (-11.16451, lambda: uniform("T1") + branch_rates("T1", "tk02", 2.0)),
    "tk02 fixed 4": (-18.27936, lambda: uniform("T1") + branch_rates("T1", "tk02", 4.0)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_recorded_lnpr(case):
    """Each formula reproduces MrBayes' recorded Gen-0 LnPr to its 7 printed digits."""
    want, compute = CASES[case]
    got = compute()
    assert abs(got - want) <= 0.6 * 10 ** (math.floor(math.log10(abs(want))) - 6), (case, got, want)


def test_uniform_fixed_tree_age_of_the_wrong_age_is_a_penalty():
    """treeagepr=fixed(x) at another root age: MrBayes' LnPriorProbFix gives NEG_INFINITY (-1e6)."""
    assert uniform("T2", age=age_prior("fixed", 0.65)) < -999000


def test_critical_branching_is_refused():
    """λ = μ: MrBayes stops ("Critical branching process ... not implemented")."""
    parent, depth, n = arrays(TREES["T1"])
    with pytest.raises(ValueError, match="critical"):
        tp.ln_birth_death(parent, depth, n, 1.0, 1e-9, 0.5, 1.0, tp.RANDOM, *GAMMA11, False)
