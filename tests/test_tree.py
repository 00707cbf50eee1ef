"""Tree: Newick reading/writing, traversal, re-rooting, random trees."""
import numpy as np
import pytest

from mbgpu.errors import DataError
from mbgpu.tree import Tree, random_tree

TAXA = {"A": 0, "B": 1, "C": 2, "D": 3, "E": 4}


def test_parse_unrooted_with_comments_quotes_and_scientific_notation():
    t = Tree.from_newick("[&U] ((A:1e-1,'B':2.5E-1)0.95:0.3,C:0.4,(D:1,E:2.0e0):0.5);", TAXA)
    assert t.n_tips == 5 and t.n_nodes == 8
    assert len(t.children()[t.root]) == 3
    assert t.brlen[:5].tolist() == [0.1, 0.25, 0.4, 1.0, 2.0]
    assert t.splits() == {frozenset({2, 3, 4}), frozenset({3, 4})}
    assert t.total_length() == pytest.approx(0.1 + 0.25 + 0.3 + 0.4 + 1 + 2 + 0.5)


def test_translate_keys_underscores_and_quoted_names():
    mapping = {"1": 0, "Homo sapiens": 0, "2": 1, "Pan": 1, "3": 2, "it's": 2}
    a = Tree.from_newick("(1:0.1,2:0.2,3:0.3);", mapping)
    b = Tree.from_newick("(Homo_sapiens:0.1,'Pan':0.2,'it''s':0.3);", mapping)
    assert a.parent.tolist() == b.parent.tolist() and a.brlen.tolist() == b.brlen.tolist()


def test_postorder_children_first_root_last():
    t = random_tree(40, np.random.default_rng(3))
    order = t.postorder().tolist()
    pos = {v: i for i, v in enumerate(order)}
    assert sorted(order) == list(range(t.n_nodes)) and order[-1] == t.root
    assert all(pos[v] < pos[int(t.parent[v])] for v in range(t.n_nodes) if t.parent[v] >= 0)


def test_newick_round_trip():
    t = random_tree(25, np.random.default_rng(4))
    names = ["t%d" % i for i in range(25)]
    back = Tree.from_newick(t.to_newick(names), {n: i for i, n in enumerate(names)})
    assert back.splits() == t.splits()
    assert back.total_length() == pytest.approx(t.total_length(), rel=1e-15)
    assert sorted(back.brlen[:25]) == sorted(t.brlen[:25])
    quoted = Tree(2, np.array([2, 2, -1]), np.array([0.5, 0.25, 0.0])).to_newick(["a b", "it's"])
    assert quoted == "('a b':0.5,'it''s':0.25);"


def test_reroot_keeps_unrooted_tree():
    t = random_tree(12, np.random.default_rng(5))
    for v in range(t.n_tips, t.n_nodes):
        r = t.reroot(v)
        assert r.splits() == t.splits()
        assert r.total_length() == pytest.approx(t.total_length(), rel=1e-14)
        assert len(r.children()[r.root]) == 3
        assert r.postorder()[-1] == r.root == r.n_nodes - 1


def test_deroot_joins_root_branches():
    t = Tree.from_newick("((A:1,B:2):0.5,(C:1,(D:1,E:1):0.25):0.75);", TAXA)
    u = t.deroot()
    assert len(u.children()[u.root]) == 3 and u.n_nodes == t.n_nodes - 1
    assert u.total_length() == pytest.approx(t.total_length())
    assert u.splits() == t.splits()


def test_random_tree_shape_and_lengths():
    t = random_tree(2000, np.random.default_rng(6), brlen=0.05)
    assert t.n_nodes == 3998 and len(t.children()[t.root]) == 3
    assert all(len(c) == 2 for v, c in enumerate(t.children()) if v >= t.n_tips and v != t.root)
    assert np.all(t.brlen[t.parent >= 0] == 0.05)
    with pytest.raises(ValueError):
        random_tree(2, np.random.default_rng(0))


@pytest.mark.parametrize("text,message", [
    ("(A,B,C,D,Q);", "unknown taxon"), ("(A,B,C,D);", "missing taxa"), ("(A,B,C,D,E,A);", "twice"),
    ("(A,B,(C,D),E;", "unclosed"), ("(A,B),C,D,E);", "misplaced"), ("(A:x,B,C,D,E);", "bad branch length"),
    ("(A,B,C,D,E); (A,B);", "text after"), ("(A,B,C,,D,E);", "misplaced"), ("(A B,C,D,E);", "unexpected label"),
    ("('A,B,C,D,E);", "unterminated"), ("[(A,B,C,D,E);", "unterminated comment"), ("(A:,B,C,D,E);", "':'")])
def test_bad_newick_raises_data_error(text, message):
    with pytest.raises(DataError, match=message):
        Tree.from_newick(text, TAXA)
