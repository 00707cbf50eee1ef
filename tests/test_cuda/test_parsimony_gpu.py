"""ParsSPR's costs on the GPU (mbgpu.cuda.parsimony) equal the numpy bit-plane costs exactly, and ParsSPR
proposes the same moves with either; DNA with ambiguity, protein, 2- to 32-state standard data (every lane
segment width of the kernel: 2, 4, 8, 16, 32), heavy weights, a 30k-pattern set."""
import numpy as np
import pytest

from mbgpu.moves import bitplanes, graph, parsimony
from mbgpu.moves.base import MoveContext
from mbgpu.moves.pars_spr import ParsSPR, _attachment
from mbgpu.tree import random_tree

pytestmark = pytest.mark.gpu


def _data(rng, n, n_states, n_patterns):
    masks = (1 << rng.integers(0, n_states, (n, n_patterns))).astype(np.uint32)
    masks[2, : n_patterns // 5] = (1 << n_states) - 1                    # missing data
    masks[5, ::7] |= 1 << int(rng.integers(0, n_states))                  # ambiguity
    w = rng.integers(1, 40, n_patterns).astype(float)
    w[3] = 5000.0                                                        # several weight bit planes
    return masks, w


def _pruned(tree, rng, anchor):
    """ParsSPR's prune: S (below u-s) cut away, u's other branches joined; (adj, s) or None."""
    n = tree.n_tips
    u, s = _attachment(tree, rng, anchor)
    adj = graph.undirected(tree)
    a, b = (z for z in adj[u] if z != s)
    if a < n and b < n:
        return None
    graph.unlink(adj, u, a), graph.unlink(adj, u, b)
    graph.link(adj, a, b, 0.0)
    graph.unlink(adj, u, s)
    return adj, s


@pytest.mark.parametrize("n_states,n_patterns,n_taxa,seed", [(4, 300, 21, 1), (4, 4097, 40, 2), (20, 1001, 17, 3),
                                                             (3, 77, 9, 4), (2, 130, 12, 5), (9, 700, 25, 6),
                                                             (32, 200, 14, 7), (4, 29588, 64, 8)])
@pytest.mark.parametrize("asynchronous", [False, True])
def test_gpu_costs_equal_numpy(device, n_states, n_patterns, n_taxa, seed, asynchronous):
    from mbgpu.cuda.parsimony import GpuParsimony

    rng = np.random.default_rng(seed)
    masks, w = _data(rng, n_taxa, n_states, n_patterns)
    planes = bitplanes.pack_masks(masks, n_states)
    w_int = bitplanes.integer_weights(w)
    gpu = GpuParsimony(device, asynchronous=asynchronous)
    checked = 0
    for _ in range(12):
        tree = random_tree(n_taxa, rng)
        pruned = _pruned(tree, rng, 0)
        if pruned is None:
            continue
        adj, s = pruned
        order, parent = parsimony.rooted_order(adj, 0)
        xs, ys = [parent[y] for y in order[1:]], order[1:]
        final = parsimony.final_sets(adj, 0, planes, n_taxa, bitplanes.PlaneOps)
        s_set = parsimony.downpass(adj, s, planes, n_taxa, ops=bitplanes.PlaneOps)[s]
        want = bitplanes.missed_weights(final, s_set, w_int, xs, ys)
        got = gpu.missed_weights(planes, adj, 0, s, xs, ys, w_int, n_taxa)
        assert got.tolist() == want.tolist()
        checked += 1
    assert checked >= 6 and want.max() > 0


def test_pars_spr_proposes_the_same_with_gpu_costs(device):
    from mbgpu.cuda.parsimony import GpuParsimony

    rng = np.random.default_rng(9)
    n = 24
    masks, w = _data(rng, n, 4, 2000)
    ctx_cpu = MoveContext(n_tips=n, pattern_masks=[(masks, w)], n_states=[4])
    ctx_gpu = MoveContext(n_tips=n, pattern_masks=[(masks, w)], n_states=[4], parsimony=GpuParsimony(device))
    move = ParsSPR()
    for k in range(25):
        tree = random_tree(n, np.random.default_rng(100 + k))
        a = move.propose(tree, np.random.default_rng(k), ctx_cpu)
        b = move.propose(tree, np.random.default_rng(k), ctx_gpu)
        assert a.log_hastings == b.log_hastings
        assert np.array_equal(a.tree.parent, b.tree.parent) and np.array_equal(a.tree.brlen, b.tree.brlen)
