"""The compiled core steps chains of several trees (`unlink topology`, or `unlink brlens` inside a linked
topology): chain c's tree t in row c R + t, each pattern set on its tree, each tree move on its tree
(MultNNI on every tree sharing the topology), the prior summed over the trees. After generations on the
core every chain's lnL and lnPr equal the interpreted sampler's of the state it exported (a fresh chain
given those trees and values)."""
import numpy as np
import pytest

from mbgpu.core import tree_moves as tm
from mbgpu.core.stepper import CoreStepper, unsupported
from mbgpu.core.trees import to_arrays
from mbgpu.moves.nni import swapped
from mbgpu.tree import Tree, random_tree
from tests.conftest import TEST_DATA
from tests.test_core.build import build_chains

CODON = ("execute %s;\n charset p1 = 1-898\\3; charset p2 = 2-898\\3; charset p3 = 3-898\\3; "
         "partition by_codon = 3: p1, p2, p3; set partition=by_codon;" % (TEST_DATA / "primates.nex"))


@pytest.mark.parametrize("unlink, shared", [("topology=(all) shape=(all)", False), ("brlens=(all)", True),
                                            ("brlens=(all); link brlens=(1,3)", True)],
                         ids=["topology", "brlens", "partial"])
def test_core_state_of_several_trees_is_the_interpreted_state(unlink, shared, tmp_path):
    """Three chains, 250 generations on the core: every tree's topology moved (one topology for trees
    sharing it), lnL (and each pattern set's) and lnPr those of the exported state, every tree's moves
    accepted."""
    chains, _params, _s = build_chains(tmp_path, CODON + " unlink %s;" % unlink, nchains=3)
    fresh, _params, _s = build_chains(tmp_path, CODON + " unlink %s;" % unlink, nchains=3)
    assert unsupported(chains) is None
    n = len(chains[0].trees)
    start = [[t.parent.copy() for t in ch.trees] for ch in chains]
    core = CoreStepper(chains)
    heats = core.heats_for([[0, 1, 2]], 0.1)
    for _ in range(250):
        core.step(heats, 100, True)
    for ch, ref, first in zip(chains, fresh, start):
        trees, values = ch.trees, ch.values
        assert len(trees) == n > 1
        assert all(not np.array_equal(t.parent, p) for t, p in zip(trees, first)), "every tree's topology moved"
        assert all(np.array_equal(t.parent, trees[0].parent) for t in trees) == shared
        ref.trees, ref.values = trees, values
        assert ch.lnl == pytest.approx(ref._initial_lnl(), rel=1e-10, abs=1e-8)
        assert ch.lnpr == pytest.approx(ref.prior_fn.of_trees(trees, values), rel=1e-10, abs=1e-8)
        for k, part in enumerate(ch.parts):
            assert part.inc.lnl == pytest.approx(ref.parts[k].inc.lnl, rel=1e-10, abs=1e-8)
    tried = {}
    for mv in chains[0].moves:
        if getattr(mv, "move", None) is not None:
            tried[mv.tree] = tried.get(mv.tree, 0) + mv.counts["accepted"]
    assert sorted(tried) == list(range(n)) and min(tried.values()) > 0      # every tree's moves were accepted


def test_mult_nni_is_one_nni_on_every_shared_tree():
    """mult_nni: the NNI drawn on the first tree of `rows` (as nni draws it from the same stream) applied
    to each tree of `rows` as mbgpu.moves.nni.swapped applies it (each tree its own lengths); the other
    trees untouched."""
    rng = np.random.default_rng(3)
    topo = random_tree(9, rng)
    trees = [Tree(9, topo.parent.copy(), rng.uniform(0.01, 0.5, topo.parent.size)) for _ in range(3)]
    arrays = [to_arrays(t) for t in trees]
    parent, kids, brlen = (np.stack([a[i] for a in arrays]) for i in range(3))
    for draw in range(20):
        state = rng.integers(1, 2**63, size=4, dtype=np.uint64)
        p, k, b = parent.copy(), kids.copy(), brlen.copy()
        assert tm.mult_nni(p, k, b, 9, state.copy(), 0, np.array([False, True, True])) == 0.0
        one = to_arrays(trees[1])
        drawn = tm.nni_draw(one[0], one[1], 9, state.copy())
        for t in (1, 2):
            want = swapped(trees[t], *drawn)
            assert np.array_equal(p[t], want.parent) and np.array_equal(b[t], want.brlen), draw
            assert np.array_equal(k[t], to_arrays(want)[1])
        assert np.array_equal(p[0], parent[0]) and np.array_equal(b[0], brlen[0])
