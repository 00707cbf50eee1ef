"""mbgpu.clock against mb-double run now: Gen-0 LnPr of a fixed start tree (docs/plans/clocks.md §0: JC,
fixed equal frequencies, so LnPr holds only the clock terms) for cases the plan could not reproduce
(interior and tip calibrations under the uniform prior, TK02) and cases it did not run (treeagepr
families, coalescent growth, a clock rate other than 1, locked but undated constraints, sampled
ancestors, fossil tips, fossil-sampling shifts, ploidy), and the text
MrBayes echoes for each distribution."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest

from mbgpu.clock import fossilized as fbd
from mbgpu.clock import relaxed
from mbgpu.clock import tree_priors as tp
from mbgpu.clock.distributions import age_distribution, calibration_message, clock_rate_distribution
from tests.test_clock.gen0 import gen0
from tests.test_clock.trees import APES, DATA, T1, T2, T3, T4, T5, TAXA, age_prior, arrays, flags, mrca

GAMMA11 = age_prior("gamma", 1, 1)
UNIFORM = "prset brlenspr=clock:uniform"
MACAQUES = ["Macaca_fuscata", "M_mulatta", "M_fascicularis", "M_sylvanus"]
HPG = ["Homo_sapiens", "Pan", "Gorilla"]
TAXSETS = ("taxset apes = %s; constraint apes = apes; taxset mac = %s; constraint mac = mac; "
           "taxset hpg = %s; constraint hpg = hpg; taxset anth = 3-12; constraint anth = anth; "
           % (" ".join(APES), " ".join(MACAQUES), " ".join(HPG)))


def _uniform(newick, dated=(), locked=(), age=GAMMA11, rate=1.0):
    parent, depth, n = arrays(newick)
    return tp.ln_uniform(parent, depth, n, rate, age[0], age[1], flags(parent.size, dated),
                         flags(parent.size, locked))


def _calu_fixed():
    apes = mrca(arrays(T1)[0], APES)
    return _uniform(T1, [apes], [apes])


def _locked_not_dated():
    parent = arrays(T1)[0]
    apes = mrca(parent, APES)
    return _uniform(T1, [apes], [apes, mrca(parent, MACAQUES)])


def _nested():
    parent, depth, n = arrays(T4)
    apes, hpg, anth = mrca(parent, APES), mrca(parent, HPG), mrca(parent, TAXA[2:])
    locked = [apes, hpg, anth, mrca(parent, MACAQUES)]
    return (_uniform(T4, [apes, hpg, anth, 0, 1], locked)
            + age_distribution("uniform", (0.1, 0.3)).ln_pdf(depth[apes])
            + age_distribution("offsetexponential", (0.3, 0.5)).ln_pdf(depth[anth]))


def _rates(newick, model, var):
    parent, depth, _ = arrays(newick)
    fn = relaxed.ln_igr_rates if model == "igr" else relaxed.ln_tk02_rates
    return fn(parent, depth, np.ones(parent.size), var)


def _cpp(newick, cpp_rate):
    parent, depth, _ = arrays(newick)
    return relaxed.ln_cpp_events(parent, depth, np.zeros(parent.size, dtype=np.int64), np.zeros((parent.size, 1)),
                                 cpp_rate, 0.4)


def _coal(newick, popsize, rate=1.0, growth=0.0, ploidy="diploid"):
    parent, depth, n = arrays(newick)
    return tp.ln_coalescent(parent, depth, n, tp.coalescent_theta(popsize, rate, ploidy), growth)


def _fbd(newick, sample_prob, strategy):
    parent, depth, n = arrays(newick)
    return (fbd.ln_fossilized_bd(parent, depth, n, 1.0, 0.1, 0.9, np.array([0.1]), sample_prob, strategy,
                                 *GAMMA11, False)
            + math.log(10) - 1)


SAMPLED_ANCESTOR = T4.replace("Lemur_catta:0.5", "Lemur_catta:0.0")     # Lemur on a zero-length branch
FOSSILS = ("prset brlenspr=clock:fossilization nodeagepr=calibrated; "
           "calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.55);")


FOSSIL_TIPS = ("prset brlenspr=clock:fossilization nodeagepr=calibrated samplestrat=fossiltip; "
               "calibrate Tarsius_syrichta=fixed(0.2) Lemur_catta=fixed(0.05);")


def _fossil_tips(d, r, s, rho, start_priors):
    parent, depth, n = arrays(T5)
    return (fbd.ln_fossilized_bd(parent, depth, n, 1.0, d, r, np.array([s]), rho, tp.FOSSILTIP, *GAMMA11, False)
            + (math.log(10) - 1 if start_priors else 0.0))


def _shifted(newick, fossilization, shifts, sample_prob=1.0, strategy=tp.RANDOM):
    parent, depth, n = arrays(newick)
    return (fbd.ln_fossilized_bd(parent, depth, n, 1.0, 0.1, 0.9, np.array(fossilization), sample_prob, strategy,
                                 *GAMMA11, False, np.array(shifts)) + math.log(10) - 1)


TIP_DATES = ("prset brlenspr=clock:fossilization nodeagepr=calibrated; "
             "calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);")


def _bd(newick, rate):
    parent, depth, n = arrays(newick)
    return tp.ln_birth_death(parent, depth, n, rate, 0.1, 0.9, 1.0, tp.RANDOM, *GAMMA11, False) + math.log(10) - 1


CASES = {
    "calu_fixed": ("%s %s topologypr=constraints(apes) nodeagepr=calibrated; calibrate apes=fixed(0.18);"
                   % (TAXSETS, UNIFORM), T1, _calu_fixed),
    "calu_locked_not_dated": ("%s %s topologypr=constraints(apes,mac) nodeagepr=calibrated; calibrate apes=fixed(0.18);"
                              % (TAXSETS, UNIFORM), T1, _locked_not_dated),
    "tip_uni": ("%s nodeagepr=calibrated; calibrate Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);" % UNIFORM,
                T4, lambda: _uniform(T4, [0, 1])),
    "tip_uni5": ("%s nodeagepr=calibrated; calibrate Tarsius_syrichta=fixed(0.2) Lemur_catta=fixed(0.05);" % UNIFORM,
                 T5, lambda: _uniform(T5, [0, 1])),        # two internal nodes tie with dated tips
    "nested_and_tips": ("%s %s topologypr=constraints(apes,hpg,anth,mac) nodeagepr=calibrated; calibrate "
                        "apes=uniform(0.1,0.3) hpg=fixed(0.07) anth=offsetexponential(0.3,0.5) "
                        "Tarsius_syrichta=fixed(0.1) Lemur_catta=fixed(0.05);" % (TAXSETS, UNIFORM), T4, _nested),
    "tk02_fixed": ("%s clockvarpr=tk02 tk02varpr=fixed(0.7);" % UNIFORM, T2,
                   lambda: _uniform(T2) + _rates(T2, "tk02", 0.7)),
    "tk02_exp": ("%s clockvarpr=tk02 tk02varpr=exponential(3);" % UNIFORM, T3,     # tk02var starts at 2/3
                 lambda: _uniform(T3) + math.log(3) - 3 * (2 / 3) + _rates(T3, "tk02", 2 / 3)),
    "igr_fixed": ("%s clockvarpr=igr igrvarpr=fixed(0.3);" % UNIFORM, T3,
                  lambda: _uniform(T3) + _rates(T3, "igr", 0.3)),
    "cpp_clockrate": ("%s clockvarpr=cpp clockratepr=fixed(0.5) cppratepr=fixed(2);" % UNIFORM, T1,   # TL: subst. units
                      lambda: _uniform(T1, rate=0.5) + _cpp(T1, 2.0)),
    "treeage_truncatednormal": ("%s treeagepr=truncatednormal(0.1,1,0.5);" % UNIFORM, T1,
                                lambda: _uniform(T1, age=age_prior("truncatednormal", 0.1, 1, 0.5))),
    "treeage_lognormal": ("%s treeagepr=lognormal(1,0.5);" % UNIFORM, T1,
                          lambda: _uniform(T1, age=age_prior("lognormal", 1, 0.5))),
    "treeage_offsetlognormal": ("%s treeagepr=offsetlognormal(0.1,1,0.5);" % UNIFORM, T1,
                                lambda: _uniform(T1, age=age_prior("offsetlognormal", 0.1, 1, 0.5))),
    "treeage_offsetgamma": ("%s treeagepr=offsetgamma(0.1,1,0.5);" % UNIFORM, T1,
                            lambda: _uniform(T1, age=age_prior("offsetgamma", 0.1, 1, 0.5))),
    "treeage_offsetexponential": ("%s treeagepr=offsetexponential(0.1,1);" % UNIFORM, T1,
                                  lambda: _uniform(T1, age=age_prior("offsetexponential", 0.1, 1))),
    "fbd_sampled_ancestor": (FOSSILS, SAMPLED_ANCESTOR, lambda: _fbd(SAMPLED_ANCESTOR, 1.0, tp.RANDOM)),
    "fbd_diversity_sampled_ancestor": (FOSSILS + " prset samplestrat=diversity sampleprob=0.5;", SAMPLED_ANCESTOR,
                                       lambda: _fbd(SAMPLED_ANCESTOR, 0.5, tp.DIVERSITY)),
    "fbd_fossiltip": (FOSSIL_TIPS, T5, lambda: _fossil_tips(0.1, 0.9, 0.1, 1.0, True)),
    "fbd_fossiltip_fixed_rates": (FOSSIL_TIPS + " prset sampleprob=0.3 speciationpr=fixed(0.5) "
                                  "extinctionpr=fixed(0.3) fossilizationpr=fixed(0.2);", T5,
                                  lambda: _fossil_tips(0.5, 0.3, 0.2, 0.3, False)),
    "fbd_shifts_per_interval": (TIP_DATES + " prset samplestrat=random 2: 0.3 0.08; "
                                "startvals relative_fossilization=(0.2,0.05,0.3);", T4,
                                lambda: _shifted(T4, [0.2, 0.05, 0.3], [0.3, 0.08])),
    "fbd_shift_at_fossil_tip": (TIP_DATES + " prset samplestrat=random 1: 0.1;", T4,
                                lambda: _shifted(T4, [0.1, 0.1], [0.1])),
    "fbd_shift_at_sampled_ancestor": (FOSSILS + " prset samplestrat=random 2: 0.55 0.2;", SAMPLED_ANCESTOR,
                                      lambda: _shifted(SAMPLED_ANCESTOR, [0.1] * 3, [0.55, 0.2])),
    "fbd_diversity_shifts": (TIP_DATES + " prset samplestrat=diversity 2: 0.3 0.08 sampleprob=0.5; "
                             "startvals relative_fossilization=(0.2,0.05,0.3);", T4,
                             lambda: _shifted(T4, [0.2, 0.05, 0.3], [0.3, 0.08], 0.5, tp.DIVERSITY)),
    "coal_haploid": ("lset ploidy=haploid; prset brlenspr=clock:coalescence popsizepr=fixed(0.5);", T1,
                     lambda: _coal(T1, 0.5, ploidy="haploid")),
    "coal_zlinked": ("lset ploidy=zlinked; prset brlenspr=clock:coalescence popsizepr=fixed(0.5);", T1,
                     lambda: _coal(T1, 0.5, ploidy="zlinked")),
    "coal_growth": ("prset brlenspr=clock:coalescence popsizepr=fixed(0.5) growthpr=fixed(2);", T1,
                    lambda: _coal(T1, 0.5, growth=2.0)),
    "coal_clockrate": ("prset brlenspr=clock:coalescence popsizepr=fixed(0.5) clockratepr=fixed(0.5);", T1,
                       lambda: _coal(T1, 0.5, rate=0.5)),
    "bd_clockrate": ("prset brlenspr=clock:birthdeath clockratepr=fixed(0.5);", T2, lambda: _bd(T2, 0.5)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_gen0_lnpr_equals_mrbayes(case, mb_double, tmp_path):
    """mbgpu.clock's log prior = MrBayes' Gen-0 LnPr (to its 7 printed digits) from the same tree."""
    commands, newick, compute = CASES[case]
    want = gen0(mb_double, tmp_path, commands, newick)["LnPr"]
    got = compute()
    assert float("%.7g" % got) == pytest.approx(want, abs=1e-12), (case, got, want)


def test_echoed_distributions_are_mrbayes_text(mb_double, tmp_path):
    """`calibrate` and `prset treeagepr/clockratepr` lines: MrBayes' echo = Distribution.text()."""
    ages = [("fixed", (0.18,)), ("uniform", (0.15, 0.25)), ("offsetexponential", (0.1, 0.2)),
            ("truncatednormal", (0.1, 0.2, 0.05)), ("lognormal", (0.2, 0.05)), ("gamma", (1.234567, 12.345)),
            ("offsetlognormal", (0.1, 0.2, 0.05)), ("offsetgamma", (0.1, 0.2, 0.05))]
    rates = [("lognormal", (-1.23456, 0.5)), ("exponential", (2,)), ("normal", (1, 0.5)), ("gamma", (2, 4)),
             ("fixed", (0.5,))]
    (tmp_path / "primates.nex").write_text(DATA.read_text())
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; execute primates.nex; end;\nbegin mrbayes; %s %s topologypr=constraints(apes) nodeagepr=calibrated;\n"
        % (TAXSETS, UNIFORM)
        + "".join("calibrate apes=%s(%s);\n" % (f, ",".join(map(repr, p))) for f, p in ages)
        + "calibrate Lemur_catta=uniform(0.05,0.15);\n"
        + "".join("prset clockratepr=%s(%s);\n" % (f, ",".join(map(repr, p))) for f, p in rates)
        + "end;\n")
    out = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120).stdout
    said = [ln.strip() for ln in out.splitlines() if ln.strip().startswith(("Setting age", "Setting Clockratepr"))]
    want = [calibration_message("apes", age_distribution(f, p)) for f, p in ages]
    want.append(calibration_message("Lemur_catta", age_distribution("uniform", (0.05, 0.15)), taxon=True))
    want += ["Setting Clockratepr to " + clock_rate_distribution(f, p).text() for f, p in rates]
    assert said == want
