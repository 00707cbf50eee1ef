"""`mcmc` under the compound Poisson process relaxed clock (clockvarpr=cpp) against mb-double: the Gen-0 `.p`
row and `.t` file (`[&E CppEvents k][&B CppEvents x]`), prior sampling (`data=no`: TH, TL, n_CPP, cppRate
and the summed effective lengths) and a posterior run on primates, so that the CPP moves, the events the
tree moves carry (mbgpu.core.clock_cpp) and the likelihood's effective lengths are checked through the
whole run path. The compound Poisson clock runs in the compiled core only."""
from __future__ import annotations

import numpy as np
import pytest

from mbgpu.errors import NotImplementedYet
from tests.helpers import interp_for
from tests.test_clock.gen0 import SETUP
from tests.test_clock.test_chain_gen0 import _file, _gen0, _run_both, _trees_to_gen0
from tests.test_clock.test_chain_relaxed import compare_over_seeds, gpu_equals_cpu
from tests.test_clock.trees import T1, T2

UNIFORM = "prset brlenspr=clock:uniform"
GEN0 = {
    "fixed_rate": (SETUP, UNIFORM + " clockvarpr=cpp cppratepr=fixed(2);", T1),
    "birthdeath_hky": ("lset nst=2 rates=gamma;", "prset brlenspr=clock:birthdeath clockvarpr=cpp "
                       "cppratepr=fixed(0.5) cppmultdevpr=fixed(0.2);", T2),
    "drawn_rate": (SETUP, UNIFORM + " clockvarpr=cpp;", T1),
}
# one run's batch means understate the error of cppRate and n_CPP many times (a chain with few events and a
# small cppRate leaves that corner slowly, in both programs): each case is compared over several runs of each
# program, with the spread of the runs' means as the error (test_chain_relaxed.compare_over_seeds)
PRIOR = {
    # a fixed tree age: the node ages mix quickly, so the events the tree moves carry are checked closely;
    # the analytic cppRate mean is 1 (its exponential(1) prior: n_CPP | tree is Poisson(cppRate x TL))
    "cpp_fixed_age": (SETUP + UNIFORM + " clockvarpr=cpp cppratepr=exponential(1) treeagepr=fixed(0.65);", T1, 200000,
                      ("TL", "n_CPP", "cppRate", "effTL")),
}
POSTERIOR = {
    "cpp_hky": ("lset nst=2 rates=gamma; " + UNIFORM + " clockvarpr=cpp clockratepr=fixed(0.3) "
                "cppratepr=exponential(1);", T1, 40000, ("LnL", "TH", "TL", "n_CPP", "cppRate", "effTL")),
}


@pytest.mark.parametrize("case", sorted(GEN0))
def test_gen0_row_and_tree_equal_mrbayes(case, mb_double, tmp_path, monkeypatch):
    _run_both(_file(*GEN0[case]), mb_double, tmp_path, monkeypatch)
    head, row = _gen0(tmp_path / "mb" / "x.p")
    our_head, our_row = _gen0(tmp_path / "ours" / "x.p")
    assert our_head == head
    assert _trees_to_gen0(tmp_path / "ours" / "x.t") == _trees_to_gen0(tmp_path / "mb" / "x.t")
    if case != "drawn_rate":                         # cppRate drawn from each program's own stream
        assert our_row == pytest.approx(row, rel=1e-6)
    else:
        assert our_row[1] == pytest.approx(row[1], rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(PRIOR))
def test_prior_sampling_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    ours = compare_over_seeds(tmp_path, monkeypatch, mb_double, PRIOR[case], False)
    assert ours[PRIOR[case][3].index("cppRate")] == pytest.approx(1.0, abs=0.35)     # its prior's mean


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(POSTERIOR))
def test_posterior_equals_mrbayes(case, mb_double, tmp_path, monkeypatch):
    compare_over_seeds(tmp_path, monkeypatch, mb_double, POSTERIOR[case], True)


@pytest.mark.parametrize("command", ["mcmc", "ss"])
def test_what_the_sampler_does_not_run_is_refused(command, tmp_path, monkeypatch):
    """FBD with CPP (its fossil moves carry no events) and `ss` with CPP (unchecked): a clear refusal."""
    from tests.test_clock.trees import DATA
    import shutil

    shutil.copy(DATA, tmp_path / "primates.nex")
    monkeypatch.chdir(tmp_path)
    tree = "fossilization" if command == "mcmc" else "uniform"
    with pytest.raises(NotImplementedYet, match="clockvarpr=cpp"):
        interp_for("#NEXUS\nbegin mrbayes; execute primates.nex;\nprset brlenspr=clock:%s clockvarpr=cpp;\n%s ngen=10 "
                   "nruns=1 nchains=1 checkpoint=no filename=r; end;\n" % (tree, command), tmp_path, "r.nex")


def test_chains_the_core_cannot_step_are_refused():
    """The interpreted step has no CPP bookkeeping in its tree moves: a cpp chain it would take is refused."""
    from mbgpu.clock.relaxed_state import RelaxedState
    from mbgpu.sampler.batch_step import _refuse_interpreted

    class Chain:
        core_refused = "mcmc reweight"
        trees = [type("T", (), {"relaxed": RelaxedState("cpp", np.ones(3))})()]

    with pytest.raises(NotImplementedYet, match="clockvarpr=cpp and mcmc reweight"):
        _refuse_interpreted(Chain())
    Chain.trees[0].relaxed = RelaxedState("igr", np.ones(3))
    _refuse_interpreted(Chain())


@pytest.mark.gpu
def test_gpu_run_equals_cpu_run(tmp_path, monkeypatch):
    """A cpp clock run on the GPU likelihood follows the CPU run: same seed, same states, LnL to 1e-6 at every
    sample (the likelihood reads the CPP effective branch lengths on both)."""
    rows = gpu_equals_cpu(tmp_path, monkeypatch, "clockvarpr=cpp")
    assert max(r[5] for r in rows) > 0                     # n_CPP: events were carried


def test_event_moves_only_run_in_the_core():
    """The interpreted step has no event bookkeeping: an event move asked to propose there says so."""
    from mbgpu.clock.chain_cpp_moves import CPP_KINDS

    for kind in ("cpp_add_delete", "cpp_position", "cpp_multiplier"):
        with pytest.raises(NotImplementedYet, match="outside the compiled sampler core"):
            CPP_KINDS[kind]().propose(None, None, None)
