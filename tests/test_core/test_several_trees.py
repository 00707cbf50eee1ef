"""The compiled core steps chains of several trees (`unlink topology`): chain c's tree t in row c R + t, each
pattern set on its tree, each tree move on its tree, the prior summed over the trees. After generations
on the core every chain's lnL and lnPr equal the interpreted sampler's of the state it exported (a
fresh chain given those trees and values); trees sharing a topology (MultNNI) are refused."""
import numpy as np
import pytest

from mbgpu.core.stepper import CoreStepper, unsupported
from tests.conftest import TEST_DATA
from tests.test_core.build import build_chains

CODON = ("execute %s; charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
         "partition by_codon = 3: p1, p2, p3; set partition=by_codon;" % (TEST_DATA / "primates.nex"))


def test_core_state_of_three_trees_is_the_interpreted_state(tmp_path):
    chains, _params, _s = build_chains(tmp_path, CODON + " unlink topology=(all) shape=(all);", nchains=3)
    fresh, _params, _s = build_chains(tmp_path, CODON + " unlink topology=(all) shape=(all);", nchains=3)
    assert unsupported(chains) is None
    start = [[t.parent.copy() for t in ch.trees] for ch in chains]
    core = CoreStepper(chains)
    heats = core.heats_for([[0, 1, 2]], 0.1)
    for _ in range(250):
        core.step(heats, 100, True)
    for ch, ref, first in zip(chains, fresh, start):
        trees, values = ch.trees, ch.values
        assert len(trees) == 3
        assert all(not np.array_equal(t.parent, p) for t, p in zip(trees, first)), "every tree's topology moved"
        ref.trees, ref.values = trees, values
        assert ch.lnl == pytest.approx(ref._initial_lnl(), rel=1e-10, abs=1e-8)
        assert ch.lnpr == pytest.approx(ref.prior_fn.of_trees(trees, values), rel=1e-10, abs=1e-8)
        for k, part in enumerate(ch.parts):
            assert part.tree == k
            assert part.inc.lnl == pytest.approx(ref.parts[k].inc.lnl, rel=1e-10, abs=1e-8)
    tried = {}
    for mv in chains[0].moves:
        if getattr(mv, "move", None) is not None:
            tried[mv.tree] = tried.get(mv.tree, 0) + mv.counts["accepted"]
    assert sorted(tried) == [0, 1, 2] and min(tried.values()) > 0      # every tree's moves were accepted


@pytest.mark.parametrize("unlink", ["brlens=(all)", "brlens=(all); link brlens=(1,3)"])
def test_trees_sharing_a_topology_stay_on_the_interpreted_step(unlink, tmp_path):
    chains, _params, _s = build_chains(tmp_path, CODON + " unlink %s;" % unlink, nchains=1)
    assert len(chains[0].trees) > 1
    assert unsupported(chains) == "trees sharing a topology (unlink brlens)"
