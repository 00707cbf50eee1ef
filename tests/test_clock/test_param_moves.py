"""The clock-rate and tree-prior parameter moves (mbgpu.clock.param_moves) sample what they should: each move
alone, in a small compiled Metropolis-Hastings loop, samples its parameter's prior (KS against scipy), fails
to when its Hastings ratio is dropped, and on a fixed tree samples the same clock rate / tree height /
birth-death rates / population size as mb-double's `mcmc data=no` with only the same moves switched on."""
from __future__ import annotations

import importlib
import math
import re
import subprocess
import types

import numpy as np
import pytest
from scipy import stats

from mbgpu.clock import distributions as dist
from mbgpu.clock import param_moves as pm
from mbgpu.clock.distributions import ln_density
from mbgpu.clock.param_moves import (CLOCKRATE_LAMBDA, EXTINCTION_DELTA, POPSIZE_LAMBDA, POPSIZE_MAX, POPSIZE_MIN,
                                     SPECIATION_LAMBDA, SPECIATION_MAX, SPECIATION_MIN, clock_rate_multiplier,
                                     extinction_slider, fossilization_slider, popsize_multiplier,
                                     speciation_multiplier)
from mbgpu.clock.rooted import root_of
from mbgpu.clock.tree_priors import ln_birth_death, ln_calibrations, ln_coalescent, ln_uniform
from mbgpu.core import rng
from tests.test_clock.test_numba import KERNELS
from tests.test_clock.trees import APES, DATA, T1, age_prior, arrays, flags, mrca

numba = pytest.importorskip("numba")

MOVE_KERNELS = {
    "param_moves": ["multiply", "slide", "clock_rate_multiplier", "speciation_multiplier", "extinction_slider",
                    "fossilization_slider", "popsize_multiplier"],
    "fbd_moves": ["fossil_counts", "_nth_fossil", "_depth_window", "add_branch", "del_branch"],
}
CLOCKRATE, SPECIATION, EXTINCTION, FOSSILIZATION, POPSIZE = range(5)
BETA = 50                                  # a target kind beside mbgpu.clock.distributions' kinds
NO_EVENTS = np.zeros(0, dtype=np.int64)
OFF_TREE_MOVES = ("ExtSprClock(Tau,V)", "NNIClock(Tau,V)", "ParsSPRClock(Tau,V)", "NodesliderClock(V)",
                  "TreeStretch(V)")


def compile_kernels() -> dict:
    """{name: numba dispatcher} of the clock priors and moves (decorated in their modules)."""
    out = {}
    for mod, names in {**KERNELS, **MOVE_KERNELS}.items():
        module = importlib.import_module("mbgpu.clock." + mod)
        out.update({name: getattr(module, name) for name in names})     # the module's own dispatchers
    return out


def jit_with(f, jitted: dict):
    """f compiled with the compiled kernels in place of the interpreted ones its module imports."""
    space = dict(f.__globals__)
    space.update(jitted)
    return numba.njit(types.FunctionType(f.__code__, space, f.__name__, f.__defaults__, f.__closure__))


@pytest.fixture(scope="module")
def jitted():
    out = compile_kernels()
    for helper in (_ln_prior, _propose, _scalar_chain, _tree_param_chain):
        out[helper.__name__] = jit_with(helper, out)
    return out


def seed(k: int) -> np.ndarray:
    return rng.seed_states(20261127, [(k, 0)])[0]


# ----------------------------------------------------------------------------------- the MH loops
def _ln_prior(kind, p, values):
    total = 0.0
    for x in values:
        if kind == BETA:
            total += (p[0] - 1.0) * math.log(x) + (p[1] - 1.0) * math.log(1.0 - x)
        else:
            total += ln_density(kind, p[0], p[1], p[2], x)
    return total


def _propose(s, move, values, tune, lo, hi, parent, depth):
    if move == CLOCKRATE:
        return clock_rate_multiplier(s, values, parent, depth, tune, NO_EVENTS)
    if move == SPECIATION:
        return speciation_multiplier(s, values, tune, lo, hi)
    if move == EXTINCTION:
        return extinction_slider(s, values, tune)
    if move == FOSSILIZATION:
        return fossilization_slider(s, values, tune)
    return popsize_multiplier(s, values, tune, lo, hi)


def _scalar_chain(s, move, values, tune, lo, hi, kind, p, n, thin, parent, depth, use_ratio):
    """n samples (every thin-th state) of `values` under target = the prior (kind, p) of every value."""
    out = np.empty((n, values.shape[0]))
    keep_v, keep_d = values.copy(), depth.copy()
    lp = _ln_prior(kind, p, values)
    for i in range(n):
        for _ in range(thin):
            keep_v[:] = values
            keep_d[:] = depth
            r = _propose(s, move, values, tune, lo, hi, parent, depth)
            new = _ln_prior(kind, p, values) if r > -math.inf else -math.inf
            if math.log(rng.uniform(s)) < new - lp + (r if use_ratio else 0.0):
                lp = new
            else:
                values[:] = keep_v
                depth[:] = keep_d
        out[i] = values
    return out


# ------------------------------------------------------------------------------- prior-only tests
CASES = {   # name: (move, start values, tuning, bounds, target kind, params, scipy distribution)
    "clockrate-lognormal": (CLOCKRATE, [1.0], pm.CLOCKRATE_LAMBDA, None, dist.LOGNORMAL_LOG, (0.0, 1.0),
                            stats.lognorm(1.0)),
    "clockrate-exponential": (CLOCKRATE, [0.5], pm.CLOCKRATE_LAMBDA, None, dist.EXPONENTIAL, (2.0,),
                              stats.expon(scale=0.5)),
    "clockrate-gamma": (CLOCKRATE, [0.5], pm.CLOCKRATE_LAMBDA, None, dist.GAMMA_SHAPE_RATE, (2.0, 4.0),
                        stats.gamma(2.0, scale=0.25)),
    "clockrate-normal": (CLOCKRATE, [1.0], pm.CLOCKRATE_LAMBDA, None, dist.NORMAL_POSITIVE, (1.0, 0.5),
                         stats.truncnorm(-2.0, np.inf, loc=1.0, scale=0.5)),
    "speciation-exponential": (SPECIATION, [0.1], pm.SPECIATION_LAMBDA, (pm.SPECIATION_MIN, pm.SPECIATION_MAX),
                               dist.EXPONENTIAL, (10.0,), stats.expon(scale=0.1)),
    "speciation-uniform": (SPECIATION, [1.0], pm.SPECIATION_LAMBDA, (0.5, 3.0), dist.UNIFORM, (0.5, 3.0),
                           stats.uniform(0.5, 2.5)),
    "extinction-beta11": (EXTINCTION, [0.9], pm.EXTINCTION_DELTA, None, BETA, (1.0, 1.0),
                          stats.uniform(0.0, 0.99999)),
    "extinction-beta25": (EXTINCTION, [0.5], pm.EXTINCTION_DELTA, None, BETA, (2.0, 5.0), stats.beta(2.0, 5.0)),
    "fossilization-beta32": (FOSSILIZATION, [0.1], pm.FOSSILIZATION_DELTA, None, BETA, (3.0, 2.0),
                             stats.beta(3.0, 2.0)),
    "fossilization-3-intervals": (FOSSILIZATION, [0.1, 0.5, 0.9], pm.FOSSILIZATION_DELTA, None, BETA, (1.0, 1.0),
                                  stats.uniform(0.00001, 1.0 - 0.00001)),
    "popsize-gamma": (POPSIZE, [0.1], pm.POPSIZE_LAMBDA, (pm.POPSIZE_MIN, pm.POPSIZE_MAX), dist.GAMMA_SHAPE_RATE,
                      (1.0, 10.0), stats.expon(scale=0.1)),
    "popsize-lognormal": (POPSIZE, [1.0], pm.POPSIZE_LAMBDA, (pm.POPSIZE_MIN, pm.POPSIZE_MAX), dist.LOGNORMAL_LOG,
                          (-1.0, 0.7), stats.lognorm(0.7, scale=math.exp(-1.0))),
    "popsize-uniform": (POPSIZE, [1.0], pm.POPSIZE_LAMBDA, (0.2, 2.0), dist.UNIFORM, (0.2, 2.0),
                        stats.uniform(0.2, 1.8)),
}


def _sample(jitted, name, k, use_ratio=True, n=3000, thin=300):
    move, start, tune, bounds, kind, params, _ = CASES[name]
    lo, hi = bounds if bounds else (0.0, 0.0)
    parent, depth, _ = arrays(T1, ())
    p = np.array(tuple(params) + (0.0,) * (3 - len(params)))
    values = np.array(start, dtype=np.float64)
    ages = depth / values[0]
    out = jitted["_scalar_chain"](seed(k), move, values, tune, lo, hi, kind, p, n, thin, parent, depth, use_ratio)
    if move == CLOCKRATE:                  # the depths follow the rate, the ages stay
        np.testing.assert_allclose(depth / values[0], ages, rtol=1e-9, atol=1e-15)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_move_alone_samples_the_prior(jitted, name):
    out = _sample(jitted, name, list(CASES).index(name))
    for column in out.T:
        assert stats.kstest(column, CASES[name][-1].cdf).pvalue > 1e-3, name


@pytest.mark.parametrize("name", ["clockrate-lognormal", "speciation-exponential", "popsize-gamma"])
def test_dropping_the_hastings_ratio_is_seen(jitted, name):
    """The multipliers' log(new/old) matters: without it the same test fails."""
    out = _sample(jitted, name, 100 + list(CASES).index(name), use_ratio=False)
    assert stats.kstest(out[:, 0], CASES[name][-1].cdf).pvalue < 1e-6


def test_reflection_stays_inside_the_bounds():
    s = seed(7)
    for _ in range(2000):
        x = np.array([0.99998])
        pm.extinction_slider(s, x, 0.5)
        assert pm.EXTINCTION_MIN <= x[0] <= pm.EXTINCTION_MAX
        x = np.array([0.00002])
        pm.fossilization_slider(s, x, 5.0)
        assert pm.FOSSILIZATION_MIN <= x[0] <= pm.FOSSILIZATION_MAX
        x = np.array([0.51])
        pm.speciation_multiplier(s, x, 3.0, 0.5, 0.6)
        assert 0.5 <= x[0] <= 0.6
        x = np.array([0.21])
        pm.popsize_multiplier(s, x, 3.0, 0.2, 0.3)
        assert 0.2 <= x[0] <= 0.3


def test_clock_rate_move_aborts_as_mrbayes():
    """A branch pushed past BRLENS_MAX (100) aborts: the ratio is -inf and nothing changes."""
    parent, depth, _ = arrays(T1, ())
    depth *= 99.0 / depth.max()
    s, aborted = seed(8), 0
    for _ in range(200):
        rate, before = np.array([1.0]), depth.copy()
        r = pm.clock_rate_multiplier(s, rate, parent, depth, 2.0, NO_EVENTS)
        if r == -math.inf:
            aborted += 1
            np.testing.assert_array_equal(depth, before)
            assert rate[0] == 1.0
        depth[:] = before
    assert 20 < aborted < 180


def test_compiled_moves_equal_interpreted(jitted):
    parent, depth, _ = arrays(T1, ())
    for name, args in (("clock_rate_multiplier", (np.array([1.0]), parent, depth.copy(), 0.8, np.ones(23, np.int64))),
                       ("speciation_multiplier", (np.array([0.1]), 0.19, 1e-6, 1000.0)),
                       ("extinction_slider", (np.array([0.5]), 0.1)),
                       ("fossilization_slider", (np.array([0.1, 0.2]), 0.1)),
                       ("popsize_multiplier", (np.array([0.1]), 0.8, 1e-5, 1e7))):
        a = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        b = [x.copy() if isinstance(x, np.ndarray) else x for x in args]
        assert jitted[name](seed(9), *a) == pytest.approx(getattr(pm, name).py_func(seed(9), *b), abs=1e-12)
        for x, y in zip(a, b):
            if isinstance(x, np.ndarray):
                np.testing.assert_allclose(x, y, rtol=1e-14)


# ------------------------------------------------------------------------ against mb-double
def run_mrbayes(mb_double, folder, commands: str, newick: str, moves_on, ngen: int, samplefreq: int):
    """mb-double `mcmc data=no` (1 chain, JC, primates) from the rooted start tree `newick` with only the
    moves `moves_on` of the default set switched on (every other move's $prob set to 0). Returns the .p
    table as {column: array} (and "_rows": the whole table) and the .t text."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "primates.nex").write_text(DATA.read_text())
    script = ("#NEXUS\nbegin mrbayes; set seed=5 swapseed=5; execute primates.nex; end;\n"
              "begin trees; tree t1 = [&R] %s\nend;\n"
              "begin mrbayes; lset nst=1 rates=equal; prset statefreqpr=fixed(equal); %s\n"
              "mcmcp ngen=%d samplefreq=%d printfreq=%d nchains=1 nruns=1 data=no mcmcdiagn=no checkpoint=no "
              "filename=x;\nstartvals tau=t1 v=t1;\n%%s\nmcmc;\nend;\n" % (newick, commands, ngen, samplefreq, ngen))
    (folder / "cmd.nex").write_text(script % "mcmcp ngen=10;")
    listed = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=120)
    off = [m for m in _moves_used(listed.stdout) if m not in moves_on]
    (folder / "cmd.nex").write_text(script % ("propset %s;" % " ".join("%s$prob=0" % m for m in off)))
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    assert sorted(_moves_used(done.stdout)) == sorted(moves_on), done.stdout[-3000:]
    lines = (folder / "x.p").read_text().splitlines()
    header = lines[1].split("\t")
    rows = np.array([[float(v) for v in ln.split("\t")] for ln in lines[2:]])
    columns = {h: column for h, column in zip(header, rows.T)}     # (shifts: one name too many, clocks.md §6.3)
    columns["_rows"] = rows
    return columns, (folder / "x.t").read_text()


def _moves_used(screen: str) -> list:
    """The move names of MrBayes' "The MCMC sampler will use the following moves" list."""
    return re.findall(r"%\s+(\S+)", screen.split("following moves:")[1].split("\n\n")[0])


def two_sample_ok(ours, theirs, name):
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-3, (name, np.mean(ours), np.mean(theirs))


def _tree_param_chain(s, moves, speciation, extinction, popsize, clock_rate, parent, depth, n_tips, tree_prior,
                      dated, kinds, params, rate_kind, rate_p, n, thin):
    """MH over the clock rate / birth-death rates / population size on a fixed tree, each step one of
    `moves` picked uniformly, target = the full clock prior of mbgpu.clock (tree prior, calibrations,
    clockratepr, Exp(10) speciation, Beta(1,1) extinction, Gamma(1,10) popsize). Samples (rate, TH, sR, eR, N)."""
    out = np.empty((n, 5))
    age_p = np.zeros(3)
    state = np.empty(3)
    keep_d = depth.copy()

    def target():
        rate = clock_rate[0]
        lp = ln_density(rate_kind, rate_p[0], rate_p[1], rate_p[2], rate)
        lp += ln_calibrations(depth / rate, kinds, params)
        if tree_prior == 0:
            lp += ln_uniform(parent, depth, n_tips, rate, 3, age_p, dated, dated)
        elif tree_prior == 1:
            lp += math.log(10.0) - 10.0 * speciation[0]
            lp += ln_birth_death(parent, depth, n_tips, rate, speciation[0], extinction[0], 1.0, 0, 3,
                                 age_p, dated[root_of(parent)])
        else:
            lp += math.log(10.0) - 10.0 * popsize[0]
            lp += ln_coalescent(parent, depth, n_tips, 4.0 * popsize[0] * rate, 0.0)
        return lp

    age_p[0], age_p[1] = 1.0, 1.0
    lp = target()
    for i in range(n):
        for _ in range(thin):
            state[0], state[1], state[2] = speciation[0], extinction[0], popsize[0]
            old_rate = clock_rate[0]
            keep_d[:] = depth
            move = moves[rng.randint(s, moves.shape[0])]
            if move == CLOCKRATE:
                r = clock_rate_multiplier(s, clock_rate, parent, depth, CLOCKRATE_LAMBDA, NO_EVENTS)
            elif move == SPECIATION:
                r = speciation_multiplier(s, speciation, SPECIATION_LAMBDA, SPECIATION_MIN, SPECIATION_MAX)
            elif move == EXTINCTION:
                r = extinction_slider(s, extinction, EXTINCTION_DELTA)
            else:
                r = popsize_multiplier(s, popsize, POPSIZE_LAMBDA, POPSIZE_MIN, POPSIZE_MAX)
            new = target() if r > -math.inf else -math.inf
            if math.log(rng.uniform(s)) < new - lp + r:
                lp = new
            else:
                speciation[0], extinction[0], popsize[0] = state[0], state[1], state[2]
                clock_rate[0] = old_rate
                depth[:] = keep_d
        out[i, 0], out[i, 1] = clock_rate[0], depth.max()
        out[i, 2], out[i, 3], out[i, 4] = speciation[0], extinction[0], popsize[0]
    return out


def _ours(jitted, moves, tree_prior, k, n, thin, rate=1.0, rate_kind=dist.FIXED, rate_p=(1.0, 0.0, 0.0),
          calibrated=None):
    parent, depth, n_tips = arrays(T1, ())
    dated = flags(parent.size, [calibrated[0]] if calibrated else [])
    kinds, params = np.full(parent.size, -1), np.zeros((parent.size, 3))
    if calibrated:
        kinds[calibrated[0]], params[calibrated[0]] = calibrated[1], calibrated[2]
    return jitted["_tree_param_chain"](seed(k), np.array(moves), np.array([0.1]), np.array([0.9]), np.array([0.1]),
                                       np.array([rate]), parent, depth, n_tips, tree_prior, dated, kinds, params,
                                       rate_kind, np.array(rate_p), n, thin)


def test_clock_rate_under_a_calibration_like_mrbayes(jitted, mb_double, tmp_path):
    """Uniform tree prior, apes calibrated uniform(0.15,0.25), clockratepr=lognormal(0,0.5), only
    Multiplier(Clockrate) on: the clock rate keeps its prior and TH = root age x rate, as in mb-double."""
    parent, _, _ = arrays(T1, ())
    apes = mrca(parent, APES)
    kind, p = age_prior("uniform", 0.15, 0.25)
    ours = _ours(jitted, [CLOCKRATE], 0, 1, 3000, 20, rate_kind=dist.LOGNORMAL_LOG, rate_p=(0.0, 0.5, 0.0),
                 calibrated=(apes, kind, p))
    taxset = "taxset apes = %s; constraint apes = apes;" % " ".join(APES)
    theirs, _ = run_mrbayes(mb_double, tmp_path, taxset + " prset brlenspr=clock:uniform topologypr=constraints(apes) "
                            "nodeagepr=calibrated clockratepr=lognormal(0,0.5); calibrate apes=uniform(0.15,0.25);",
                            T1, ["Multiplier(Clockrate)"], 60000, 20)
    two_sample_ok(ours[:, 0], theirs["clockrate"][1:], "clockrate")
    two_sample_ok(ours[:, 1], theirs["TH"][1:], "TH")
    np.testing.assert_allclose(theirs["TH"] / theirs["clockrate"], 0.65, rtol=1e-5)
    assert stats.kstest(ours[:, 0], stats.lognorm(0.5).cdf).pvalue > 1e-3


def test_birth_death_rates_like_mrbayes(jitted, mb_double, tmp_path):
    """clock:birthdeath on the fixed tree T1, only Multiplier(Net_speciation) and Slider(Relative_extinction)
    on: net_speciation and relative_extinction sampled as by mb-double (target = Exp(10) x Beta(1,1) x the
    birth-death density of T1)."""
    ours = _ours(jitted, [SPECIATION, EXTINCTION], 1, 2, 4000, 200)
    theirs, _ = run_mrbayes(mb_double, tmp_path, "prset brlenspr=clock:birthdeath;", T1,
                            ["Multiplier(Net_speciation)", "Slider(Relative_extinction)"], 400000, 100)
    two_sample_ok(ours[:, 2], theirs["net_speciation"][1:], "net_speciation")
    two_sample_ok(ours[:, 3], theirs["relative_extinction"][1:], "relative_extinction")


def test_population_size_like_mrbayes(jitted, mb_double, tmp_path):
    """clock:coalescence on T1, only Multiplier(Popsize) on: popsize as mb-double samples it (Gamma(1,10)
    prior x the coalescent density with θ = 4 N r)."""
    ours = _ours(jitted, [POPSIZE], 2, 3, 3000, 50)
    theirs, _ = run_mrbayes(mb_double, tmp_path, "prset brlenspr=clock:coalescence;", T1, ["Multiplier(Popsize)"],
                            150000, 50)
    two_sample_ok(ours[:, 4], theirs["popsize"][1:], "popsize")


def test_clock_rate_move_counts_cpp_events_on_non_root_branches():
    """With CPP events, MrBayes adds Σ events × log(new/old length) = events × log(factor) (root excluded)."""
    parent, depth, _ = arrays(T1, ())
    events = np.arange(parent.size, dtype=np.int64)
    root = root_of(parent)
    rate_a, rate_b = np.array([1.0]), np.array([1.0])
    plain = pm.clock_rate_multiplier(seed(10), rate_a, parent, depth.copy(), 0.8, NO_EVENTS)
    with_events = pm.clock_rate_multiplier(seed(10), rate_b, parent, depth.copy(), 0.8, events)
    assert rate_a[0] == rate_b[0] and plain == pytest.approx(math.log(rate_a[0]))
    assert with_events - plain == pytest.approx((events.sum() - events[root]) * math.log(rate_a[0]))
