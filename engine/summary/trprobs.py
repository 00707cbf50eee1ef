"""MrBayes 3.2.7a's TreeProb: the `.trprobs` file, the credible-set lines and (`showtreeprobs=yes`) every
sampled tree drawn on screen with its probability, most probable first."""
from __future__ import annotations

from mbgpu.summary.common import mb_quicksort
from mbgpu.summary.showtree import show_tree
from mbgpu.summary.treeorder import TreeCounter, newick, rebuild

_HEAD = ('[This file contains the trees that were found during the MCMC\nsearch, sorted by posterior '
         'probability. "p" indicates the\nposterior probability of the tree whereas "P" indicates the\n'
         'cumulative posterior probability.]\n\nbegin trees;\n   translate\n')


def _sorted(counter: TreeCounter) -> list:
    """Distinct trees in TreeCtrUppass order, then MrBayes' SortTreeCtr by count (ties as it leaves them)."""
    items = counter.in_preorder() if counter.root is not None else []
    if items:
        mb_quicksort(items, 0, len(items) - 1, lambda v: v.count)
    return items


def _credible(below: dict, n_trees: int) -> list[str]:
    """The X % set holds the trees whose cumulative probability is below X %, and the one that crosses
    it; the 50/90/95 % sets are printed only when some tree lies below them, the 99 % set always."""
    out = ["   Credible sets of trees (%d tree%s sampled):" % (n_trees, "s" if n_trees > 1 else "")]
    for x, k in below.items():
        if k or x == 99:
            out.append("      %d %% credible set contains %d tree%s" % (x, k + 1, "" if k == 0 else "s"))
    return out


def tree_probabilities(counter: TreeCounter, taxa: list[str], sampled: int, rooted: bool,
                       show: bool) -> tuple[str, list[str]]:
    """(.trprobs text without #NEXUS and [ID], screen lines) for the counted trees."""
    n = len(taxa)
    text = _HEAD + "".join("   %2d %s%s\n" % (k + 1, t, ";" if k == n - 1 else ",") for k, t in enumerate(taxa))
    screen = ["   Calculating tree probabilities...", ""]
    cum, below = 0.0, {50: 0, 90: 0, 95: 0, 99: 0}
    items = _sorted(counter)
    for num, item in enumerate(items):
        p = item.count / sampled
        cum += p
        for x in below:
            below[x] += cum < x / 100.0
        tree = rebuild(item.order, n, rooted)
        if show:
            screen += ["", "   Tree %d (p = %1.3f, P = %1.3f):" % (num + 1, p, cum), ""]
            screen += show_tree(tree, rooted)
        text += "   tree tree_%d [p = %1.3f, P = %1.3f] = [&W %1.6f] %s;\n" % (num + 1, p, cum, p, newick(tree, rooted))
    return text + "end;\n", screen + _credible(below, len(items))
