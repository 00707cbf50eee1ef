"""MrBayes' random clock start state (mbgpu.clock.random_start) without `startvals tau=/v=`: properties
over many seeds, mb-double's Gen-0 trees (its node depths recomputed on its own topologies, and the
distributions of TH, TL, the calibrated node's age and the tree's depth in branches against ours over many
draws), MrBayes' calibration-conflict sentences, and its random draws of clock parameter start values."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest
from scipy.stats import ks_2samp

from mbgpu.clock.model import clock_models
from mbgpu.clock.random_start import (AGE_PRIORS, draw_start_values, random_clock_start, start_depths,
                                      uniform_rooted_topology)
from mbgpu.clock.rooted import depths_of, internal_postorder
from mbgpu.clock.start_tree import _mrca
from mbgpu.errors import ModelError, NotImplementedYet
from mbgpu.tree import Tree
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP
from tests.test_clock.trees import APES, DATA, TAXA

N_MB = 40                 # mb-double runs (seeds) per case
N_MB_CLADES = 120         # for the constrained topology: random joins vs uniform inside the clades need more
N_OURS = 2000             # our draws per case
P_MIN = 1e-3              # two-sample KS p-value below which a distribution differs

CONSTRAIN = "constraint apes = %s;" % " ".join(APES)
CAL = CONSTRAIN + " calibrate apes=%s; prset brlenspr=clock:%s topologypr=constraints(apes) nodeagepr=calibrated;"
TIPS = "calibrate Pan=fixed(2) Homo_sapiens=uniform(1,3); prset brlenspr=clock:%s nodeagepr=calibrated;"
CASES = {
    "uniform": "prset brlenspr=clock:uniform;",
    "birthdeath": "prset brlenspr=clock:birthdeath;",
    "tree_age_uniform_rate_lognormal": "prset brlenspr=clock:uniform treeagepr=uniform(2,5) clockratepr=lognormal(-1,0.5);",
    "calibrated_uniform": CAL % ("uniform(5,10)", "uniform"),
    "calibrated_fixed": CAL % ("fixed(6)", "birthdeath"),
    "calibrated_rate_lognormal": (CAL % ("offsetexponential(5,10)", "uniform"))[:-1] + " clockratepr=lognormal(-3,0.5);",
    "tip_dates": TIPS % "uniform",
    "fossilization": TIPS % "fossilization",
    "coalescence": "prset brlenspr=clock:coalescence;",
    "coalescence_calibrated": CAL % ("uniform(5,10)", "coalescence"),
    "clade_of_all_but_one": "constraint rest = 2-12; prset brlenspr=clock:uniform topologypr=constraints(rest);",
}


def _settings(tmp_path, commands: str):
    shutil.copy(DATA, tmp_path / "primates.nex")
    it = interp_for("#NEXUS\nbegin mrbayes; execute primates.nex; end;\nbegin mrbayes; %s %s\nend;\n"
                    % (SETUP, commands), tmp_path)
    return it.settings


def _mb_run(mb_double, folder, commands: str, seed: int):
    """mb-double's `mcmc ngen=1` from its random start: (return code, screen, Gen-0 .p row, Gen-0 tree)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA, folder / "primates.nex")
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=%d swapseed=%d; execute primates.nex; end;\nbegin mrbayes; %s %s\n"
        "mcmc ngen=1 samplefreq=1 printfreq=1 nchains=1 nruns=1 mcmcdiagn=no checkpoint=no filename=x;\nend;\n"
        % (seed, seed, SETUP, commands))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not (folder / "x.p").exists():
        return done.returncode or 1, done.stdout, None, None
    lines = (folder / "x.p").read_text().splitlines()
    row = dict(zip(lines[1].split("\t"), map(float, lines[2].split("\t"))))
    tline = next(ln for ln in (folder / "x.t").read_text().splitlines() if "tree gen.0" in ln)
    newick = re.sub(r"\[[^]]*\]\s*", "", tline.split("=", 1)[1].strip())
    return 0, done.stdout, row, Tree.from_newick(newick, {str(i + 1): i for i in range(len(TAXA))})


def _stats(parent, depth, rate, model) -> dict:
    """TH, TL, the tree's depth in branches, its Sackin index and cherries (the topology's shape), and the apes
    node's age where it is calibrated."""
    n = len(TAXA)
    steps = np.zeros(parent.shape[0])
    for v in internal_postorder(parent, n):
        steps[v] = 1 + max(steps[c] for c in np.flatnonzero(parent == v))
    level = np.zeros(parent.shape[0])                 # branches from the root
    for v in internal_postorder(parent, n)[::-1]:
        level[parent == v] = level[v] + 1
    lengths = np.where(parent >= 0, depth[np.maximum(parent, 0)] - depth, 0.0)
    out = {"TH": depth.max(), "TL": lengths.sum(), "branches": steps.max(), "sackin": level[:n].sum(),
           "cherries": np.count_nonzero(np.bincount(parent[:n], minlength=parent.shape[0]) == 2)}
    if model.node_calibrations:
        out["apes_age"] = depth[_mrca(parent, model.node_calibrations[0].taxa)] / rate
    return {k: float("%.5g" % v) for k, v in out.items()}        # the .t file's 7 digits leave rounding noise


@pytest.mark.parametrize("case", list(CASES))
def test_start_state_properties_over_seeds(case, tmp_path):
    """Over 200 seeds: tips ultrametric or at their dates, every calibration satisfied, hard constraints
    kept, the tree age inside treeagepr's support, branch lengths not negative."""
    s = _settings(tmp_path, CASES[case])
    (model,) = clock_models(s)
    rng = np.random.default_rng(11)
    for _ in range(200):
        st = random_clock_start(s, model, rng)
        age = st.depth / st.clock_rate
        assert np.all(np.bincount(st.parent[st.parent >= 0])[st.n_tips:] == 2) and np.count_nonzero(st.parent < 0) == 1
        lengths = np.where(st.parent >= 0, st.depth[np.maximum(st.parent, 0)] - st.depth, 0.0)
        assert np.all(lengths >= 0.0)
        dated = np.zeros(st.n_tips, dtype=bool)
        for cal in model.node_calibrations + model.tip_calibrations:
            v = _mrca(st.parent, cal.taxa)
            assert cal.dist.min - 1e-12 <= age[v] <= cal.dist.max + 1e-12, (cal.name, age[v])
            dated[list(cal.taxa)] = cal.tip
            if not cal.tip:
                below = {t for t in range(st.n_tips) if _mrca(st.parent, {t, *cal.taxa}) == v}
                assert below == set(cal.taxa) and st.locked[v]            # the constraint holds
        assert np.all(st.depth[:st.n_tips][~dated] == 0.0)
        top = int(np.flatnonzero(st.parent < 0)[0])
        if model.tree_prior in AGE_PRIORS and not st.dated[top]:
            assert model.tree_age.min <= age[top] <= model.tree_age.max


@pytest.mark.parametrize("case", list(CASES))
def test_gen0_trees_match_mrbayes(case, mb_double, tmp_path):
    """mb-double's Gen-0 trees over N_MB seeds: our depths on each of its topologies are its depths (1e-5: the
    .t file keeps 7 digits), and TH, TL, the tree's shape (the topology's distribution: uniform rooted trees,
    or random joins inside constraints) and the calibrated node's age follow the distributions of our draws
    (KS)."""
    s = _settings(tmp_path, CASES[case])
    (model,) = clock_models(s)
    dated = [t for c in model.tip_calibrations for t in c.taxa]
    theirs = []
    for seed in range(1, (N_MB_CLADES if case == "calibrated_uniform" else N_MB) + 1):
        rc, screen, row, tree = _mb_run(mb_double, tmp_path / ("mb%d" % seed), CASES[case], seed)
        assert rc == 0, screen[-2000:]
        rate = row.get("clockrate", model.clock_rate_start)
        assert rate == pytest.approx(model.clock_rate_start, rel=1e-6)
        want = depths_of(tree, dated)
        assert want.max() == pytest.approx(row["TH"], rel=1e-6)
        assert start_depths(tree.parent, tree.n_tips, model) == pytest.approx(want, rel=1e-5, abs=1e-5)
        theirs.append(_stats(tree.parent, want, rate, model))
    rng = np.random.default_rng(5)
    ours = []
    for _ in range(N_OURS):
        st = random_clock_start(s, model, rng)
        ours.append(_stats(st.parent, st.depth, st.clock_rate, model))
    for key in theirs[0]:
        a, b = np.array([x[key] for x in theirs]), np.array([x[key] for x in ours])
        assert ks_2samp(a, b).pvalue > P_MIN, (key, a.mean(), b.mean())


def test_uniform_rooted_topology_is_uniform():
    """BuildRandomRTopology gives each of the 15 rooted topologies of 4 tips with probability 1/15."""
    rng = np.random.default_rng(3)
    counts: dict = {}
    for _ in range(15000):
        parent = uniform_rooted_topology(4, rng)
        clades = frozenset(frozenset(t for t in range(4) if _mrca(parent, {t, v}) == v) for v in range(4, 7))
        counts[clades] = counts.get(clades, 0) + 1
    assert len(counts) == 15 and max(abs(c - 1000) for c in counts.values()) < 5 * np.sqrt(1000)


ROOT_CAL = "constraint root = 1-12; calibrate root=uniform(1,3) Pan=uniform(3,4); prset brlenspr=clock:%s " \
           "topologypr=constraints(root) nodeagepr=calibrated;"
CONFLICTS = {
    "tree_age_below_calibration": (
        CONSTRAIN + " calibrate apes=uniform(5,10); prset brlenspr=clock:uniform treeagepr=uniform(1,4) "
        "topologypr=constraints(apes) nodeagepr=calibrated;",
        ["Calibration inconsistency for root node", "Cannot make a tree where the node is Uniform(1.00,4.00)"]),
    "node_below_tip_date": (
        CONSTRAIN + " calibrate apes=uniform(1,1.5) Pan=fixed(2); prset brlenspr=clock:uniform "
        "topologypr=constraints(apes) nodeagepr=calibrated;",
        ["Calibration inconsistency for node 'apes'", "Cannot make a tree where the node is Uniform(1.00,1.50)"]),
    "fixed_node_at_tip_date": (
        CONSTRAIN + " calibrate apes=fixed(2) Pan=fixed(2); prset brlenspr=clock:birthdeath "
        "topologypr=constraints(apes) nodeagepr=calibrated;",
        ["Calibration inconsistency for node 'apes'", "Cannot make a tree where the node is Fixed(2.00)"]),
    "calibrated_root_below_tip": (
        ROOT_CAL % "coalescence",
        ["Calibration inconsistency for node 'root'", "Cannot make a tree where the node is Uniform(1.00,3.00)"]),
}


@pytest.mark.parametrize("case", list(CONFLICTS))
def test_conflicting_calibrations_give_mrbayes_sentences(case, mb_double, tmp_path):
    """Calibrations no start tree satisfies: mb-double stops with two lines, mbgpu's ModelError carries both."""
    commands, sentences = CONFLICTS[case]
    rc, screen, _, _ = _mb_run(mb_double, tmp_path / "mb", commands, 1)
    assert rc != 0 and all(x in screen for x in sentences), screen[-2000:]
    s = _settings(tmp_path, commands)
    (model,) = clock_models(s)
    with pytest.raises(ModelError) as e:
        random_clock_start(s, model, np.random.default_rng(1))
    assert all(x in e.value.one_line() for x in sentences), e.value.one_line()


DRAWS = {
    "popsize": "prset brlenspr=clock:coalescence popsizepr=uniform(0.1,2);",
    "igrvar": "prset brlenspr=clock:uniform clockvarpr=igr igrvarpr=uniform(0.1,2);",
    "tk02var": "prset brlenspr=clock:uniform clockvarpr=tk02 tk02varpr=uniform(0.5,3);",
    "cppRate": "prset brlenspr=clock:uniform clockvarpr=cpp cppratepr=exponential(0.5);",
}


@pytest.mark.parametrize("key", list(DRAWS))
def test_random_start_values_follow_mrbayes_draws(key, mb_double, tmp_path):
    """The start values MrBayes draws (uniform popsize/igrvar/tk02var, cppRate): mb-double's Gen-0 values over
    N_MB seeds and ours over N_OURS draws agree (KS); the other starts are ClockModel.starts()."""
    s = _settings(tmp_path, DRAWS[key])
    (model,) = clock_models(s)
    theirs = []
    for seed in range(1, N_MB + 1):
        rc, screen, row, _ = _mb_run(mb_double, tmp_path / ("mb%d" % seed), DRAWS[key], seed)
        assert rc == 0, screen[-2000:]
        theirs.append(row[key])
    rng = np.random.default_rng(8)
    draws = [draw_start_values(model, rng) for _ in range(N_OURS)]
    fixed = {k: v for k, v in model.starts().items() if v is not None}
    assert all({k: d[k] for k in fixed} == fixed for d in draws[:10])
    ours = np.array([d[key] for d in draws])
    assert ks_2samp(theirs, ours).pvalue > P_MIN, (np.mean(theirs), ours.mean())


def _clade_depths(parent: np.ndarray, depth: np.ndarray, n: int) -> dict:
    """Each node's depth keyed by its tips (node ids differ between trees of one topology)."""
    tips: dict = {v: {v} for v in range(n)}
    for v in internal_postorder(parent, n):
        tips[v] = set().union(*(tips[c] for c in np.flatnonzero(parent == v)))
    return {frozenset(t): round(float(depth[v]), 6) for v, t in tips.items()}


def test_fixed_topology_start_matches_mrbayes(mb_double, tmp_path):
    """`topologypr=fixed(t1)` without startvals: the user tree's topology with InitCalibratedBrlens' depths,
    as mb-double's Gen-0 tree."""
    from tests.test_clock.trees import T1
    commands = "prset brlenspr=clock:uniform topologypr=fixed(t1);"
    folder = tmp_path / "mb"
    folder.mkdir()
    shutil.copy(DATA, folder / "primates.nex")
    trees = "begin trees; tree t1 = [&R] %s\nend;\n" % T1
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=3 swapseed=3; execute primates.nex; end;\n%sbegin mrbayes; %s %s\n"
        "mcmc ngen=1 samplefreq=1 printfreq=1 nchains=1 nruns=1 mcmcdiagn=no checkpoint=no filename=x;\nend;\n"
        % (trees, SETUP, commands))
    subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, timeout=120, check=True)
    tline = next(ln for ln in (folder / "x.t").read_text().splitlines() if "tree gen.0" in ln)
    tree = Tree.from_newick(re.sub(r"\[[^]]*\]\s*", "", tline.split("=", 1)[1].strip()),
                            {str(i + 1): i for i in range(len(TAXA))})
    shutil.copy(DATA, tmp_path / "primates.nex")
    s = interp_for("#NEXUS\nbegin mrbayes; execute primates.nex; end;\n%sbegin mrbayes; %s %s\nend;\n"
                   % (trees, SETUP, commands), tmp_path).settings
    (model,) = clock_models(s)
    st = random_clock_start(s, model, np.random.default_rng(1))
    assert _clade_depths(st.parent, st.depth, 12) == _clade_depths(tree.parent, depths_of(tree), 12)


@pytest.mark.parametrize("commands", ["mcmcp starttree=parsimony;", "mcmcp nperts=2;",
                                      "constraint no = 1-3; prset topologypr=constraints(no);".replace("= ", "negative = ")])
def test_unsupported_start_options_are_refused(commands, tmp_path):
    """What the random clock start does not copy from MrBayes yet is refused, not done otherwise."""
    s = _settings(tmp_path, "prset brlenspr=clock:uniform; " + commands)
    (model,) = clock_models(s)
    with pytest.raises(NotImplementedYet):
        random_clock_start(s, model, np.random.default_rng(1))
