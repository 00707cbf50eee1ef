"""Clock chains run in the compiled core (mbgpu.core.clock_rows / clock_moves): after a few hundred
generations of every clock move (two runs of heated chains), each chain's rows are a ClockTree whose
unrooted view is the core's tree row, whose interpreted log prior (ClockTree.ln_prior, checked against
mb-double in tests/test_clock) is the core's compiled clock term to 1e-9, whose whole LnPr is the chain's,
and whose log likelihood computed afresh is the one the core carried. That MrBayes scores the core's states as the core does is tests/test_clock/test_chain_state.py."""
from __future__ import annotations

import numpy as np
import pytest

import mbgpu.core.stepper as stepper
from mbgpu.core import trees as T
from tests.helpers import interp_for
from tests.conftest import TEST_DATA

APES = "taxset apes = Homo_sapiens Pan Gorilla Pongo Hylobates; constraint apes = apes;"
CASES = {
    "uniform_calibrated": "%s lset nst=2 rates=gamma; prset brlenspr=clock:uniform topologypr=constraints(apes) "
                          "nodeagepr=calibrated clockratepr=exponential(10); calibrate apes=uniform(0.1,0.4);" % APES,
    "birthdeath": "lset nst=2; prset brlenspr=clock:birthdeath clockratepr=lognormal(-3,1);",
    "coalescence": "lset nst=1; prset brlenspr=clock:coalescence popsizepr=gamma(2,10);",
    "igr": "lset nst=1; prset brlenspr=clock:uniform clockvarpr=igr;",
    "tk02": "lset nst=1; prset brlenspr=clock:birthdeath clockvarpr=tk02 tk02varpr=uniform(0.1,2);",
    "cpp": "lset nst=1; prset brlenspr=clock:uniform clockvarpr=cpp;",
    "tip_dates": "lset nst=1; prset brlenspr=clock:uniform nodeagepr=calibrated clockratepr=exponential(10); "
                 "calibrate Tarsius_syrichta=uniform(0.05,0.15) Lemur_catta=uniform(0.02,0.08);",
    "fossilized": "lset nst=1; prset brlenspr=clock:fossilization nodeagepr=calibrated extinctionpr=beta(2,2) "
                  "fossilizationpr=beta(2,5) treeagepr=uniform(0.5,1.5) samplestrat=random 1: 0.15; "
                  "calibrate Tarsius_syrichta=uniform(0.01,0.3) Lemur_catta=fixed(0.05);",
}


def _stepped(case: str, tmp_path, monkeypatch) -> list:
    """The CoreSteppers of a 400-generation run of `case` (2 runs x 2 chains), their chains' state final."""
    held, init = [], stepper.CoreStepper.__init__

    def keep(self, chains):
        init(self, chains)
        held.append(self)

    monkeypatch.setattr(stepper.CoreStepper, "__init__", keep)
    monkeypatch.chdir(tmp_path)
    interp_for("#NEXUS\nbegin mrbayes; execute %s;\nset seed=7 swapseed=7; %s\nmcmc ngen=400 nruns=2 nchains=2 "
               "samplefreq=50 printfreq=400 diagnfreq=400 checkpoint=no filename=x; end;\n"
               % (TEST_DATA / "primates.nex", CASES[case]), tmp_path)
    return held


def _recomputed_lnl(core) -> np.ndarray:
    """Every chain's log likelihood computed afresh (every node, current trees and models) by the core's own
    evaluation into its proposal slots (which the next proposal overwrites)."""
    from mbgpu.core.division import CUR, PROP

    t, d = core.trees, core.divisions[0]
    t.parent_p[:], t.kids_p[:], t.brlen_p[:] = t.parent, t.kids, t.brlen
    for row in (d.evals, d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar, d.mult):
        row[:, PROP] = row[:, CUR]
    core.todo[0, :] = 2
    d.evaluate(core.view(0))
    core.todo[0, :] = 0
    return core.div_lnl_p[0].copy()


@pytest.mark.parametrize("case", sorted(CASES))
def test_core_rows_are_a_clock_tree_with_the_interpreted_prior(case, tmp_path, monkeypatch):
    held = _stepped(case, tmp_path, monkeypatch)
    assert len(held) == 1, "the compiled core did not step the clock chains"
    core = held[0]
    moved = 0
    for c, ch in enumerate(core.chains):
        tree = ch.trees[0]
        parent, kids, brlen = T.to_arrays(tree)
        np.testing.assert_array_equal(parent, core.trees.parent[c])
        np.testing.assert_array_equal(kids, core.trees.kids[c])
        np.testing.assert_array_equal(brlen, core.trees.brlen[c])
        assert core.brl[c, 0] == pytest.approx(tree.ln_prior(), abs=1e-9)
        assert ch.lnpr == pytest.approx(ch.prior_fn.of_trees(ch.trees, ch.values), abs=1e-9)
        moved += int(core.moves.counts[c, :, 1].sum())
    assert moved > 100
    np.testing.assert_allclose(_recomputed_lnl(core), core.div_lnl[0], rtol=0, atol=1e-7)
    accepted = {mv.name: mv.counts["accepted"] for mv in core.chains[0].moves}
    assert all(n > 0 for name, n in accepted.items() if "Clock" in name or "Stretch" in name or "Cpp" in name), \
        str(accepted)
    if case == "cpp":
        assert max(int(ch.trees[0].relaxed.n_events.sum()) for ch in core.chains) > 0


def test_the_core_takes_clock_chains_but_not_several_clock_trees():
    class Fake:
        prior_fn = type("P", (), {"clocks": (object(), object())})()
        trees = [None, None]

    assert stepper.unsupported([Fake()]) == "several trees with a clock tree"


def test_a_new_root_of_the_unrooted_view_recomputes_its_old_parent():
    """A clock move can change which node roots the unrooted view (the rooted root's internal child): the
    planning marks the old root, which lost a child (a run on primates found a stale partial there)."""
    from mbgpu.core.division import mark_chain

    old = np.array([16, 16, 12, 12, 14, 13, 13, 21, 21, 19, 18, 20, 14, 15, 15, 20, 17, -1, 17, 18, 17, 19])
    new = old.copy()
    new[17], new[18] = 18, -1                    # 18 was 17's child; now 17 hangs below the new root 18
    n, n_tips = old.size, 12
    rows = []
    for par in (old, new):
        kids = np.full((n, 3), -1, dtype=np.int32)
        T.fill_kids(par.astype(np.int32), kids)
        rows.append((par.astype(np.int32)[None], kids[None]))
    brlen = np.full((1, n), 0.1)
    slots = [np.zeros((1, n), dtype=np.int8) for _ in range(4)]
    mark, order, mats = np.zeros(n, dtype=np.int8), np.zeros(2 * n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    _, k, root = mark_chain(0, False, rows[1][0], rows[1][1], brlen, rows[0][0], brlen, *slots, n_tips, mark, order,
                            mats)
    assert root == 18
    assert set(order[:k].tolist()) == {17, 18}
