"""The relaxed-clock moves (mbgpu.clock.relaxed_moves, cpp_moves, relaxed_lengths) on a fixed 5-taxon clock
tree: compiled = interpreted; small Metropolis-Hastings samplers of the igr / tk02 / cpp priors made of them
sample the analytic distributions; and they sample what mb-double samples with `mcmc data=no` and its
tree moves switched off (propset), read from its .p and .t ([&B IgrBrlens x], [&E CppEvents k])."""
from __future__ import annotations

import math
import re
import subprocess

import numpy as np
import pytest
from scipy import stats

from mbgpu.clock import cpp_moves, limits, relaxed_lengths as rl, relaxed_moves as rm
from mbgpu.core.rng import seed_states
from tests.test_clock.relaxed_chains import DEPTH, KIDS, LENGTH, NEWICK, PARENT, jit_kernels, ks_ok

CAP = 64                                   # CPP event slots per branch
INTERPRETED = {k: getattr(f, "py_func", f) for k, f in {**vars(rm), **vars(cpp_moves)}.items()}


@pytest.fixture(scope="module")
def jitted():
    """{name: numba dispatcher} of the kernels and the samplers."""
    return jit_kernels()


def _state(seed: int):
    return seed_states(seed, [(0, 0)])[0]


def _cpp_state(n_events=None):
    n = PARENT.size
    events = np.zeros(n, dtype=np.int64) if n_events is None else n_events.copy()
    positions, mults = np.zeros((n, CAP)), np.ones((n, CAP))
    for v in range(n):
        positions[v, :events[v]] = np.linspace(0.2, 0.8, events[v])
        mults[v, :events[v]] = np.linspace(0.7, 1.6, events[v])
    eff = np.zeros(n)
    rl.cpp_effective_lengths(PARENT, KIDS, DEPTH, events, positions, mults, eff)
    return events, positions, mults, eff


def test_compiled_moves_equal_interpreted(jitted):
    """Each kernel compiles in nopython mode and, from the same random state, changes the same arrays in
    the same way and returns the same ratio as the interpreted function."""
    rates = np.linspace(0.6, 1.4, PARENT.size)
    for name, args in [("move_igr_branch_rate", (PARENT, DEPTH, rates, LENGTH * rates, 0.5)),
                       ("move_tk02_branch_rate", (PARENT, KIDS, DEPTH, rates, LENGTH.copy(), 0.5)),
                       ("move_cpp_add_delete", (PARENT, KIDS, DEPTH) + _cpp_state(np.arange(9) % 3) + (0.4,)),
                       ("move_cpp_position", (PARENT, KIDS, DEPTH) + _cpp_state(np.arange(9) % 3)),
                       ("move_cpp_multiplier", (PARENT, KIDS, DEPTH) + _cpp_state(np.arange(9) % 3) + (0.4,))]:
        for seed in range(5):
            mine = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            theirs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            got = jitted[name](_state(seed), *theirs)
            want = INTERPRETED[name](_state(seed), *mine)
            assert got == pytest.approx(want, abs=1e-12), name
            for a, b in zip(mine, theirs):
                if isinstance(a, np.ndarray):
                    np.testing.assert_allclose(a, b, atol=1e-14, err_msg=name)
    for name in ("move_igrvar", "move_tk02var", "move_cpp_rate"):
        args = (0.3, 0.8) + ((limits.IGRVAR_MIN, limits.IGRVAR_MAX) if name != "move_cpp_rate" else ())
        want = INTERPRETED[name](_state(3), *args)
        assert jitted[name](_state(3), *args) == pytest.approx(want, abs=1e-14)


def test_compiled_lengths_equal_interpreted(jitted):
    """The effective-length and tree-change kernels compile and agree with the interpreted ones."""
    depth = DEPTH.copy()
    depth[7] = 0.3
    nodes = np.array([2, 6, 7])
    rates = np.linspace(0.6, 1.4, PARENT.size)
    for name in ("igr_after_tree_change", "tk02_after_tree_change"):
        mine, theirs = np.zeros(9), np.zeros(9)
        assert jitted[name](PARENT, depth, rates, theirs, nodes) == vars(rl)[name].py_func(PARENT, depth, rates, mine, nodes)
        np.testing.assert_allclose(mine, theirs, atol=1e-15)
    mine, theirs = _cpp_state(np.arange(9) % 4), _cpp_state(np.arange(9) % 4)
    want = rl.cpp_after_tree_change.py_func(LENGTH, PARENT, KIDS, depth, *mine, nodes)
    assert jitted["cpp_after_tree_change"](LENGTH, PARENT, KIDS, depth, *theirs, nodes) == pytest.approx(want)
    np.testing.assert_allclose(mine[3], theirs[3], atol=1e-15)
    for name in ("cpp_merge", "cpp_split"):
        assert jitted[name](0, 5, *theirs[:3], 0.1, 0.3) == vars(rl)[name].py_func(0, 5, *mine[:3], 0.1, 0.3)
        for a, b in zip(mine[:3], theirs[:3]):
            np.testing.assert_allclose(a, b, atol=1e-15)


def test_cpp_effective_length_by_hand():
    """Two events on the AB branch (positions from its top: 0.25 x1.5, 0.5 x2) and one on A's branch: the
    branch's mean rate and the rates passed up to A and B, as UpdateCppEvolLength computes them."""
    events = np.zeros(9, dtype=np.int64)
    positions, mults, eff = np.zeros((9, 4)), np.ones((9, 4)), np.zeros(9)
    events[5], positions[5, :2], mults[5, :2] = 2, (0.25, 0.5), (1.5, 2.0)
    events[0], positions[0, 0], mults[0, 0] = 1, 0.4, 0.5
    rl.cpp_effective_lengths(PARENT, KIDS, DEPTH, events, positions, mults, eff)
    assert eff[5] == pytest.approx(0.3 * (0.25 * 3.0 + 0.25 * 2.0 + 0.5 * 1.0))
    assert eff[1] == pytest.approx(0.1 * 3.0)
    assert eff[0] == pytest.approx(0.1 * 3.0 * (0.4 * 0.5 + 0.6))
    assert eff[2] == pytest.approx(0.25) and eff[8] == 0.0


def test_extspr_merge_split_keep_absolute_positions():
    """cpp_merge then cpp_split with the same cut give back the events; positions map by absolute place."""
    events, positions, mults, _ = _cpp_state(np.array([2, 0, 0, 0, 0, 3, 0, 0, 0]))
    before = (positions[0, :2].copy(), positions[5, :3].copy(), mults[5, :3].copy())
    assert rl.cpp_merge(0, 5, events, positions, mults, 0.1, 0.3)
    assert events[0] == 5 and events[5] == 0
    np.testing.assert_allclose(positions[0, :2] * 0.4, before[0] * 0.1)
    np.testing.assert_allclose(positions[0, 2:5] * 0.4, 0.1 + before[1] * 0.3)
    assert rl.cpp_split(0, 5, events, positions, mults, 0.1, 0.3)
    np.testing.assert_allclose(positions[0, :2], before[0])
    np.testing.assert_allclose(positions[5, :3], before[1])
    np.testing.assert_allclose(mults[5, :3], before[2])


def test_grow_before_a_row_fills():
    """`grow` doubles the event slots once a row is one short of full and keeps the events."""
    events, positions, mults, _ = _cpp_state(np.array([2, 0, 0, 0, 0, CAP - 1, 0, 0, 0]))
    wider_p, wider_m = cpp_moves.grow(positions, mults, events)
    assert wider_p.shape == (9, 2 * CAP) and wider_m.shape == (9, 2 * CAP)
    np.testing.assert_array_equal(wider_p[:, :CAP], positions)
    np.testing.assert_array_equal(wider_m[:, :CAP], mults)
    events[5] = 3
    assert cpp_moves.grow(positions, mults, events)[0] is positions


def test_tree_change_terms():
    """After a depth change the CPP term is Σ n ln(new/old) over the listed branches, and an effective igr
    length out of MrBayes' bounds aborts the tree move (-inf)."""
    events, positions, mults, eff = _cpp_state(np.array([1, 0, 2, 0, 0, 0, 0, 3, 0]))
    depth = DEPTH.copy()
    depth[7] = 0.3                                      # CDE node deeper: C's branch 0.3, CDE's 0.1, DE's 0.23
    nodes = np.array([2, 6, 7])
    got = rl.cpp_after_tree_change(LENGTH, PARENT, KIDS, depth, events, positions, mults, eff, nodes)
    assert got == pytest.approx(2 * math.log(0.3 / 0.25) + 3 * math.log(0.1 / 0.15))
    rates = np.ones(9)
    rates[6] = 2e-9 / 0.23                              # effective length 2e-9 < RELBRLENS_MIN
    assert rl.igr_after_tree_change(PARENT, depth, rates, eff, nodes) == -math.inf
    assert rl.igr_after_tree_change(PARENT, depth, rates, eff, np.array([2, 7])) == 0.0
    assert eff[6] == pytest.approx(2e-9)


def _run_igr(jitted, seed, var, w_var, n_gen, thin, tunings=(1.0, 1.0), prior_rate=10.0):
    rates = np.ones(PARENT.size)
    eff = LENGTH.copy()
    out_var, out_eff = np.zeros(n_gen // thin), np.zeros((n_gen // thin, PARENT.size))
    jitted["igr_chain"](_state(seed), PARENT, DEPTH, rates, eff, var, prior_rate, w_var, np.array(tunings),
                        n_gen, thin, out_var, out_eff)
    return out_var, out_eff / np.where(LENGTH > 0, LENGTH, 1.0)


def test_igr_rates_sample_gamma(jitted):
    """igrvar fixed at 0.3: each branch rate ~ Gamma(shape = rate = l / 0.3) (IgrBrlens prior)."""
    _, rate = _run_igr(jitted, 1, 0.3, 0.0, 1_000_000, 100)
    for v in (0, 3, 5, 7):
        shape = LENGTH[v] / 0.3
        ok, d, bound = ks_ok(rate[:, v], stats.gamma(shape, scale=1.0 / shape).cdf)
        assert ok, (v, d, bound)


def test_igrvar_samples_its_prior(jitted):
    """igrvar with its default Exponential(10) prior and the rates free: igrvar's marginal is its prior."""
    var, _ = _run_igr(jitted, 2, 0.1, rm.WEIGHT_IGRVAR, 2_000_000, 200)
    ok, d, bound = ks_ok(var, stats.expon(scale=0.1).cdf)
    assert ok, (d, bound)


def _run_tk02(jitted, seed, nu, w_var, n_gen, thin, tunings=(1.0, 1.0), prior_rate=1.0):
    rates = np.ones(PARENT.size)
    eff = LENGTH.copy()
    out_var, out_eff = np.zeros(n_gen // thin), np.zeros((n_gen // thin, PARENT.size))
    jitted["tk02_chain"](_state(seed), PARENT, KIDS, DEPTH, rates, eff, nu, prior_rate, w_var, np.array(tunings),
                         n_gen, thin, out_var, out_eff)
    return out_var, out_eff


def test_tk02_rates_sample_lognormal(jitted):
    """tk02var fixed at 1: the rate of a child of the root (rate 1) is lognormal with mean 1 and variance
    ν l (LnProbTK02LogNormal), read back from the effective length l (1 + r) / 2."""
    _, eff = _run_tk02(jitted, 3, 1.0, 0.0, 1_000_000, 100)
    for v in (5, 7):
        sigma = math.sqrt(math.log(1.0 + LENGTH[v]))
        rate = 2.0 * eff[:, v] / LENGTH[v] - 1.0
        ok, d, bound = ks_ok(rate, stats.lognorm(sigma, scale=math.exp(-sigma * sigma / 2.0)).cdf)
        assert ok, (v, d, bound)


def test_tk02var_samples_its_prior(jitted):
    """tk02var with its default Exponential(1) prior and the node rates free: its marginal is its prior."""
    nu, _ = _run_tk02(jitted, 4, 2.0, rm.WEIGHT_TK02VAR, 2_000_000, 200)
    ok, d, bound = ks_ok(nu, stats.expon(scale=1.0).cdf)
    assert ok, (d, bound)


def _run_cpp(jitted, seed, lam, w_rate, n_gen, thin, prior_rate=1.0, sigma=0.4, tuning=1.0):
    state = _cpp_state()
    m = n_gen // thin
    out_lam, out_events = np.zeros(m), np.zeros((m, PARENT.size), dtype=np.int64)
    out_eff, out_mult = np.zeros((m, PARENT.size)), np.zeros(m)
    jitted["cpp_chain"](_state(seed), PARENT, KIDS, DEPTH, state, lam, sigma, prior_rate, w_rate, tuning, n_gen,
                        thin, out_lam, out_events, out_eff, out_mult)
    return out_lam, out_events, out_eff, out_mult


def discrete_ok(x: np.ndarray, cdf, level: float = 1.95) -> tuple:
    """(passes, D, bound): largest distance between the empirical and the given cdf over the integers
    seen, against level/sqrt(effective n)."""
    from tests.test_clock.relaxed_chains import ess
    ks = np.arange(0, int(x.max()) + 1)
    d = np.max(np.abs(np.searchsorted(np.sort(x), ks, "right") / x.size - cdf(ks)))
    bound = level / math.sqrt(ess(x))
    return d < bound, d, bound


def test_cpp_events_sample_poisson_and_lognormal(jitted):
    """cppRate fixed at 2: the number of events is Poisson(2 TL), on one branch Poisson(2 l), and an
    event's rate multiplier is lognormal(0, 0.4) (cppmultdev)."""
    _, events, _, mult = _run_cpp(jitted, 5, 2.0, 0.0, 1_000_000, 100)
    ok, d, bound = discrete_ok(events.sum(axis=1), stats.poisson(2.0 * LENGTH.sum()).cdf)
    assert ok, (d, bound)
    ok, d, bound = discrete_ok(events[:, 5], stats.poisson(2.0 * 0.3).cdf)
    assert ok, (d, bound)
    ok, d, bound = ks_ok(mult[mult > 0], stats.lognorm(0.4).cdf)
    assert ok, (d, bound)


def test_cpp_rate_samples_its_prior(jitted):
    """cppRate with an Exponential(1) prior and the events free: its marginal is its prior."""
    lam, _, _, _ = _run_cpp(jitted, 6, 1.0, cpp_moves.WEIGHT_CPP_RATE, 2_000_000, 200)
    ok, d, bound = ks_ok(lam, stats.expon(scale=1.0).cdf)
    assert ok, (d, bound)


def _run_slider(jitted, seed, n_gen, thin, lam=3.0):
    state, depth = _cpp_state(), DEPTH.copy()
    out_depth, out_events = np.zeros(n_gen // thin), np.zeros((n_gen // thin, PARENT.size), dtype=np.int64)
    jitted["slider_cpp_chain"](_state(seed), PARENT, KIDS, depth, state, lam, 0.4, 0.2, n_gen, thin, out_depth,
                               out_events)
    return out_depth, out_events


def test_cpp_terms_of_a_depth_move(jitted):
    """A node-depth slider with cpp_after_tree_change's term, beside the CPP moves: the node's depth keeps
    its flat prior (the CPP prior is normalised for every tree) and the number of events is the mixture
    over that depth of Poisson(λ TL), TL = depth + 0.97 (MrBayes' NodesliderClock CPP block)."""
    depth, events = _run_slider(jitted, 10, 1_000_000, 100)
    ok, d, bound = ks_ok(depth, stats.uniform(0.07, 0.33).cdf)
    assert ok, (d, bound)
    grid = np.linspace(0.07, 0.4, 401)[:, None]
    ok, d, bound = discrete_ok(events.sum(axis=1), lambda k: stats.poisson(3.0 * (grid + 0.97)).cdf(k).mean(axis=0))
    assert ok, (d, bound)


# --- against mb-double: `mcmc data=no` on the same fixed tree, tree moves off, only the relaxed-clock moves

TREE_MOVES_OFF = ("propset ExtSprClock(Tau,V)$prob=0 NNIClock(Tau,V)$prob=0 ParsSPRClock(Tau,V)$prob=0 "
                  "NodesliderClock(V)$prob=0 TreeStretch(V)$prob=0;")
NUMBER = r"([0-9.eE+-]+)"


def run_mrbayes(mb_double, folder, prset: str, ngen: int = 1_000_000, samplefreq: int = 500) -> tuple:
    """mb-double's (.p columns as arrays, .t branch annotations as an array (samples, branches, values)),
    the first 10 % of samples dropped; nchains/nruns go in mcmcp before propset (mcmc would reset them)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.nex").write_text(
        "#NEXUS\nbegin data; dimensions ntax=5 nchar=1; format datatype=dna; matrix\n"
        "A A\nB A\nC A\nD A\nE A\n; end;\n"
        "begin trees; tree t1 = [&R] %s end;\n"
        "begin mrbayes; set seed=11 swapseed=11;\n"
        "lset nst=1 rates=equal; prset statefreqpr=fixed(equal) brlenspr=clock:uniform %s;\n"
        "startvals tau=t1 v=t1; mcmcp nchains=1 nruns=1 mcmcdiagn=no checkpoint=no;\n%s\n"
        "mcmc data=no ngen=%d samplefreq=%d printfreq=%d filename=x;\nend;\n"
        % (NEWICK, prset, TREE_MOVES_OFF, ngen, samplefreq, ngen))
    done = subprocess.run([str(mb_double), "run.nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    moves = done.stdout.split("following moves:")[1].split("\n\n")[0]
    assert "Clock(" not in moves and "TreeStretch" not in moves, moves
    lines = (folder / "x.p").read_text().splitlines()[1:]
    header, rows = lines[0].split("\t"), np.array([[float(x) for x in ln.split("\t")] for ln in lines[1:]])
    keep = rows.shape[0] // 10
    columns = {name: rows[keep:, i] for i, name in enumerate(header)}
    annotation = re.compile(r":%s((?:\[&[EB] [A-Za-z0-9]+ %s\])+)" % (NUMBER, NUMBER))
    trees = [ln for ln in (folder / "x.t").read_text().splitlines() if ln.strip().startswith("tree gen.")]
    branches = [[[float(m.group(1))] + [float(x) for x in re.findall(r" ([0-9.eE+-]+)\]", m.group(2))]
                 for m in annotation.finditer(t.split("=", 1)[1])] for t in trees]
    return columns, np.array(branches)[keep:]


def by_length(values: np.ndarray, lengths: np.ndarray) -> dict:
    """{branch length (rounded): all values of the branches of that length} (sister tips pooled)."""
    out = {}
    for j in range(values.shape[1]):
        key = round(float(lengths[j]), 6)
        out[key] = np.concatenate([out.get(key, np.zeros(0)), values[:, j]])
    return out


def assert_same(mine: np.ndarray, theirs: np.ndarray, what) -> None:
    ok, d, bound = ks_ok(mine, theirs)
    assert ok, (what, d, bound, mine.mean(), theirs.mean())


def _compare_rates(mine_eff, mrbayes_branches, rate_of) -> None:
    """Per branch length: the rates read from the effective lengths agree with mb-double's .t (ours
    rounded to the 7 digits the .t prints, so that the point mass at 1 of a CPP branch without events
    falls on the same number)."""
    lengths = mrbayes_branches[0, :, 0]
    mine_eff = np.vectorize(lambda x: float("%e" % x))(mine_eff)
    theirs = by_length(rate_of(mrbayes_branches[:, :, -1], lengths), lengths)
    mine = by_length(rate_of(mine_eff[:, :-1], LENGTH[:-1]), LENGTH[:-1])
    assert sorted(theirs) == sorted(mine)
    for key in mine:
        assert_same(mine[key], theirs[key], key)


def test_igr_as_mrbayes(mb_double, tmp_path, jitted):
    """clockvarpr=igr (igrvar ~ Exp(10)): igrvar and each branch's rate (IgrBrlens x / length) as mb-double's."""
    columns, branches = run_mrbayes(mb_double, tmp_path, "clockvarpr=igr")
    var, eff = _run_igr(jitted, 7, 0.1, rm.WEIGHT_IGRVAR, 2_000_000, 200)
    assert_same(var, columns["igrvar"], "igrvar")
    _compare_rates(eff * LENGTH, branches, lambda e, lengths: e / lengths)


def test_tk02_as_mrbayes(mb_double, tmp_path, jitted):
    """clockvarpr=tk02 (tk02var ~ Exp(1)): tk02var and each branch's mean rate (TK02Brlens x / length)."""
    columns, branches = run_mrbayes(mb_double, tmp_path, "clockvarpr=tk02")
    nu, eff = _run_tk02(jitted, 8, 2.0, rm.WEIGHT_TK02VAR, 2_000_000, 200)
    assert_same(nu, columns["tk02var"], "tk02var")
    _compare_rates(eff, branches, lambda e, lengths: e / lengths)


def test_cpp_as_mrbayes(mb_double, tmp_path, jitted):
    """clockvarpr=cpp cppratepr=exponential(1): cppRate, the number of events (n_CPP), each branch's event
    count ([&E CppEvents k]) and mean rate ([&B CppEvents x] / length) as mb-double's."""
    columns, branches = run_mrbayes(mb_double, tmp_path, "clockvarpr=cpp cppratepr=exponential(1)")
    lam, events, eff, _ = _run_cpp(jitted, 9, 1.0, cpp_moves.WEIGHT_CPP_RATE, 2_000_000, 200)
    assert_same(lam, columns["cppRate"], "cppRate")
    assert_same(events.sum(axis=1).astype(float), columns["n_CPP"], "n_CPP")
    lengths = branches[0, :, 0]
    theirs, mine = by_length(branches[:, :, 1], lengths), by_length(events[:, :-1].astype(float), LENGTH[:-1])
    for key in mine:
        assert_same(mine[key], theirs[key], ("events", key))
    _compare_rates(eff, branches, lambda e, lengths: e / lengths)
