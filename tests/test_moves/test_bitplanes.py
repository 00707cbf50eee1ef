"""ParsSPR's bit-plane parsimony equals the per-pattern Fitch formulas: the same final sets and the same
integer candidate costs, for DNA with ambiguity, protein, and pattern counts that are not multiples of 64."""
import numpy as np
import pytest

from mbgpu.moves import bitplanes, graph, parsimony
from mbgpu.tree import random_tree

pytestmark = pytest.mark.skipif(not bitplanes.AVAILABLE, reason="numpy without bitwise_count")


def _unpack(planes: np.ndarray, n_patterns: int) -> np.ndarray:
    """uint64 [k, W] planes -> uint32 masks [n_patterns]."""
    bits = np.unpackbits(planes.view(np.uint8).reshape(planes.shape[0], -1), axis=1, bitorder="little")
    bits = bits[:, :n_patterns].astype(np.uint32)
    return (bits << np.arange(planes.shape[0], dtype=np.uint32)[:, None]).sum(axis=0).astype(np.uint32)


@pytest.mark.parametrize("n_states,n_patterns,seed", [(4, 300, 1), (4, 64, 2), (20, 1001, 3), (3, 77, 4)])
def test_planes_give_the_per_pattern_sets_and_costs(n_states, n_patterns, seed):
    rng = np.random.default_rng(seed)
    n = 21
    tree = random_tree(n, rng)
    masks = (1 << rng.integers(0, n_states, (n, n_patterns))).astype(np.uint32)
    masks[2, : n_patterns // 5] = (1 << n_states) - 1                    # missing data
    masks[5, ::7] |= 1 << int(rng.integers(0, n_states))                  # ambiguity
    planes = bitplanes.pack_masks(masks, n_states)
    assert all(np.array_equal(_unpack(planes[v], n_patterns), masks[v]) for v in range(n))
    adj = graph.undirected(tree)
    final_m = parsimony.final_sets(adj, 0, masks, n)
    final_p = parsimony.final_sets(adj, 0, planes, n, bitplanes.PlaneOps)
    assert all(np.array_equal(_unpack(final_p[v], n_patterns), final_m[v]) for v in final_m)
    order, parent = parsimony.rooted_order(adj, 0)
    xs, ys = [parent[y] for y in order[1:]], order[1:]
    s = order[len(order) // 2]
    down_m = parsimony.downpass(adj, 0, masks, n)
    down_p = parsimony.downpass(adj, 0, planes, n, ops=bitplanes.PlaneOps)
    assert np.array_equal(_unpack(down_p[s], n_patterns), down_m[s])
    w = rng.integers(0, 40, n_patterns).astype(float)
    w[3] = 5000.0                                                        # a heavy pattern: several weight bits
    direct = [float(w[((final_m[x] | final_m[y]) & down_m[s]) == 0].sum()) for x, y in zip(xs, ys)]
    got = bitplanes.missed_weights(final_p, down_p[s], bitplanes.integer_weights(w), xs, ys)
    assert got.tolist() == direct and max(direct) > 0


def test_only_non_negative_integer_weights_take_the_plane_path():
    assert bitplanes.integer_weights(np.array([0.0, 3.0, 7.0])).tolist() == [0, 3, 7]
    assert bitplanes.integer_weights(np.array([1.5, 2.0])) is None
    assert bitplanes.integer_weights(np.array([-1.0, 2.0])) is None
