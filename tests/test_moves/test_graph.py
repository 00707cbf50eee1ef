"""mbgpu.moves.graph: to_tree re-directs only what link/unlink recorded, and must give the tree that a
walk over the whole rewired adjacency gives (the one tree directed away from the old root)."""
import numpy as np
import pytest

from mbgpu.moves import graph
from mbgpu.moves.base import MoveContext
from mbgpu.moves.nni import NNI
from mbgpu.moves.pars_spr import ParsSPR
from mbgpu.moves.spr import ExtSPR
from mbgpu.moves.tbr import ExtTBR
from mbgpu.tree import random_tree
from tests.test_moves.test_invariance import random_data


def _full(template, adj):
    return graph._to_tree_full(template, [dict(d) for d in adj])


def _random_spr(adj, tree, rng):
    """Prune a random non-root attachment node with its subtree and regraft it on a random edge of the rest."""
    n = tree.n_tips
    while True:
        s = int(rng.integers(0, tree.n_nodes))
        w = int(tree.parent[s])
        if w < 0 or w == tree.root and rng.random() < 0.5:
            continue
        others = [z for z in adj[w] if z != s]
        if len(others) == 2:
            break
    ahead, behind = others
    graph.prune(adj, w, s, ahead, behind)
    side = {s, w}
    stack = [s]
    while stack:                                   # the pruned side: everything reachable from s
        v = stack.pop()
        for z in adj[v]:
            if z not in side:
                side.add(z)
                stack.append(z)
    edges = [(x, y) for x in range(tree.n_nodes) for y in adj[x] if x < y and x not in side and y not in side]
    x, y = edges[int(rng.integers(0, len(edges)))]
    graph.regraft(adj, w, x, y, float(rng.exponential(0.1)))
    return n


@pytest.mark.parametrize("n_tips", [4, 5, 12, 40])
def test_recorded_to_tree_equals_the_full_walk(n_tips):
    rng = np.random.default_rng(n_tips)
    for _ in range(200):
        tree = random_tree(n_tips, rng)
        adj = graph.undirected(tree)
        for _ in range(int(rng.integers(1, 4))):
            _random_spr(adj, tree, rng)
        if rng.random() < 0.3:                     # a length change alone is recorded too
            v = int(rng.integers(0, tree.n_nodes))
            if v != tree.root:
                graph.link(adj, v, int(tree.parent[v]), 0.5)
        got, want = graph.to_tree(tree, adj), _full(tree, adj)
        assert np.array_equal(got.parent, want.parent) and np.array_equal(got.brlen, want.brlen)


def test_untouched_adjacency_gives_the_same_tree_and_a_plain_list_takes_the_full_walk():
    tree = random_tree(9, np.random.default_rng(1))
    adj = graph.undirected(tree)
    same = graph.to_tree(tree, adj)
    assert np.array_equal(same.parent, tree.parent) and np.array_equal(same.brlen, tree.brlen)
    plain = [dict(d) for d in adj]
    assert not hasattr(plain, "touched")
    assert np.array_equal(graph.to_tree(tree, plain).parent, tree.parent)


@pytest.mark.parametrize("move", [ExtSPR(), ExtTBR(), ParsSPR()], ids=lambda m: m.name)
def test_moves_give_the_full_walks_tree(move, monkeypatch):
    """Each rewiring move's result equals what the whole-tree walk makes of the same adjacency."""
    calls = []
    recorded = graph.to_tree

    def both(template, adj):
        got, want = recorded(template, adj), _full(template, adj)
        assert np.array_equal(got.parent, want.parent) and np.array_equal(got.brlen, want.brlen)
        calls.append(1)
        return got

    for mod in ("spr", "tbr", "pars_spr"):
        monkeypatch.setattr("mbgpu.moves.%s.to_tree" % mod, both)
    rng = np.random.default_rng(4)
    ctx = MoveContext(n_tips=14, **random_data(3, 14, 30))
    tree = random_tree(14, rng)
    for _ in range(150):
        prop = move.propose(tree, rng, ctx)
        if not prop.aborted:
            tree = prop.tree
    assert len(calls) > 100


def test_rooted_children_is_rooted_order_with_each_nodes_children():
    from mbgpu.moves.parsimony import rooted_children, rooted_order

    rng = np.random.default_rng(5)
    for n in (3, 6, 30):
        tree = random_tree(n, rng)
        adj = graph.undirected(tree)
        for root in (0, n - 1, tree.root):
            order, parent, kids = rooted_children(adj, root)
            assert (order, parent) == rooted_order(adj, root)
            assert all(kids[v] == [w for w in adj[v] if w != parent[v]] for v in order)


def test_attachment_draws_the_branch_the_listed_edges_give():
    """ParsSPR's branch draw indexes 'every non-root node but the anchor, in order' without the list."""
    from mbgpu.moves.pars_spr import _attachment

    rng = np.random.default_rng(6)
    for n in (4, 9, 25):
        for anchor in (0, n // 2, n - 1):
            tree = random_tree(n, rng)
            path = graph.path_to_root(tree, anchor)
            edges = [v for v in np.flatnonzero(tree.parent >= 0).tolist() if v != anchor]
            a, b = np.random.default_rng(n + anchor), np.random.default_rng(n + anchor)
            for _ in range(200):
                v = edges[int(b.random() * len(edges))]
                p = int(tree.parent[v])
                assert _attachment(tree, a, anchor) == ((v, p) if v in path else (p, v))


def _nni_by_adjacency(tree, rng):
    """NNI as rewiring of the undirected tree (the move's definition): the reference for the array form."""
    n = tree.n_tips
    internal = [v for v in range(n, tree.n_nodes) if tree.parent[v] >= 0]
    u = internal[int(rng.random() * len(internal))]
    v = int(tree.parent[u])
    adj = graph.undirected(tree)
    a_side = sorted(w for w in adj[u] if w != v)
    c_side = sorted(w for w in adj[v] if w != u)
    a = a_side[0] if rng.random() < 0.5 else a_side[1]
    c = c_side[0]
    la, lc = graph.unlink(adj, u, a), graph.unlink(adj, v, c)
    graph.link(adj, u, c, lc)
    graph.link(adj, v, a, la)
    return graph._to_tree_full(tree, adj)


@pytest.mark.parametrize("n_tips", [4, 5, 8, 30])
def test_nni_on_parent_arrays_is_the_rewiring(n_tips):
    rng = np.random.default_rng(n_tips)
    ctx = MoveContext(n_tips=n_tips)
    turned = 0
    tree = random_tree(n_tips, rng, brlen=lambda g, k: g.exponential(0.1, k))
    for _ in range(300):
        for _ in range(3):                  # SPR steps: parents are no longer numbered above their children
            prop = ExtSPR().propose(tree, rng, ctx)
            tree = tree if prop.aborted else prop.tree
        seed = int(rng.integers(1 << 30))
        got = NNI().propose(tree, np.random.default_rng(seed), ctx).tree
        want = _nni_by_adjacency(tree, np.random.default_rng(seed))
        assert np.array_equal(got.parent, want.parent) and np.array_equal(got.brlen, want.brlen)
        turned += int(np.count_nonzero(got.parent != tree.parent) > 2)     # the case where c is v's parent
    assert turned > 10 or n_tips <= 5        # a turn needs an internal neighbour numbered above v's parent
