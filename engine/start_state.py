"""Starting trees of the chains: the fixed topology of `prset topologypr=fixed(NAME)`, the `startvals
tau=/V=` tree (which must satisfy the topology constraints), or a random topology inside the constraints
with every branch 0.02 long (MrBayes' default), drawn from the chain's own random stream."""
from __future__ import annotations

import numpy as np

from mbgpu import constraints
from mbgpu.errors import DataError, ModelError, NotImplementedYet
from mbgpu.parsimony_start import parsimony_tree
from mbgpu.tree import Tree, random_tree

DEFAULT_BRLEN = 0.02


def taxon_index(taxa: list[str], translate: dict[str, str]) -> dict[str, int]:
    """Labels a tree may use: taxon names, translate keys, and 1-based numbers when unambiguous."""
    index = {name: i for i, name in enumerate(taxa)}
    for key, name in translate.items():
        if name not in index:
            raise DataError("translate maps '%s' to '%s', which is not a taxon of the matrix" % (key, name))
        index[key] = index[name]
    for i in range(len(taxa)):
        index.setdefault(str(i + 1), i)
    return index


def user_tree(settings, name: str) -> Tree:
    """A named tree of a trees block as an unrooted Tree over the matrix taxa."""
    rec = settings.trees[name]
    try:
        tree = Tree.from_newick(rec.newick, taxon_index(settings.matrix.taxa, rec.translate))
    except DataError as err:
        raise DataError("tree '%s': %s" % (name, err.message), rec.where) from None
    if tree.n_tips != settings.matrix.ntax:
        raise DataError("tree '%s' has %d taxa, the matrix %d" % (name, tree.n_tips, settings.matrix.ntax),
                        rec.where)
    return tree.deroot()


def start_tree(settings, rng: np.random.Generator, pars=None, chain: tuple[int, int] = (0, 0),
               suffix: str = "", tau_suffix: str | None = None, divisions=None) -> Tree:
    """The start tree of one chain: the fixed topology (`prset topologypr=fixed(NAME)`, which overrides
    startvals tau as in MrBayes), startvals when given (unless `mcmc starttree=random` or `parsimony`),
    otherwise random, or by parsimony from `pars` (the data's state masks and pattern weights, for
    `starttree=parsimony`); branch lengths from startvals V, else 0.02; then `mcmc nperts` random NNIs
    (MrBayes' RandPerturb). `chain` (run, chain): the startvals trees reach only the chains of
    `Settings.startvals_grid`, as in MrBayes (chains added by a later nruns or nchains start at random).
    `suffix`: with several trees (`unlink topology`) the tree's MrBayes suffix, `{1}`: startvals tau{1}=;
    `tau_suffix` (None: `suffix`) that of its Tau when trees share it; `divisions` (0-based, None: all)
    those of its Tau, whose topology prior (fixed, constraints) it starts in."""
    if settings.matrix.ntax < 3:
        raise DataError("an analysis needs at least 3 taxa; the matrix has %d" % settings.matrix.ntax)
    tau = settings.startval("Tau" + (suffix if tau_suffix is None else tau_suffix))
    v = settings.startval("V" + suffix)
    grid = settings.startvals_grid
    if grid is not None and not (chain[0] < grid[0] and chain[1] < grid[1]):
        tau = v = None
    if settings.mcmc.get("Starttree", "Current") in ("Random", "Parsimony"):
        tau = v = None
    fixed, cset = settings.fixed_topology(divisions), constraints.active(settings, divisions)
    if fixed is not None:
        tau = fixed
    if tau is None and v is None and settings.mcmc.get("Starttree") == "Parsimony":
        if cset is not None:
            raise NotImplementedYet("mcmc starttree=parsimony with topology constraints is not supported yet")
        tree = parsimony_tree(pars[0], pars[1], rng, DEFAULT_BRLEN)
    elif tau is None and v is None:
        tree = cset.random_tree(rng, DEFAULT_BRLEN) if cset is not None else \
            random_tree(settings.matrix.ntax, rng, brlen=DEFAULT_BRLEN)
    else:
        tree = _user_start(settings, tau, v, fixed is not None)
        broken = cset.violated(tree) if cset is not None else None
        if broken is not None:                         # MrBayes: "Tree breaks constraint '...'"
            raise ModelError("startvals: tree '%s' breaks constraint '%s'" % (tau or v, broken.name))
    nperts = int(settings.mcmc.get("Nperts", 0))
    return perturb(tree, nperts, rng, cset) if nperts and fixed is None else tree


def _user_start(settings, tau: str | None, v: str | None, fixed: bool) -> Tree:
    """The startvals tree: tau's topology with V's branch lengths (0.02 without V)."""
    tree = user_tree(settings, tau or v)
    if v is None:
        tree.brlen[tree.parent >= 0] = DEFAULT_BRLEN
    elif tau is not None and v != tau:
        lengths = user_tree(settings, v)
        if lengths.splits() != tree.splits():
            raise ModelError("startvals: tree '%s' (V) does not have the topology of '%s' (%s)"
                             % (v, tau, "the fixed topology" if fixed else "tau"))
        tree = lengths
    if np.any(tree.brlen[tree.parent >= 0] <= 0):
        raise ModelError("startvals: tree '%s' has a branch length that is not positive" % (v or tau))
    return tree


def perturb(tree: Tree, n: int, rng: np.random.Generator, cset=None, tries: int = 1000) -> Tree:
    """`n` random NNIs (MrBayes' RandPerturb for `mcmc nperts`): an internal branch other than the root's
    own, uniformly, and one of its child subtrees swapped with a sibling subtree across it; lengths stay
    with their subtrees. A swap that breaks a constraint is drawn again (MrBayes skips locked nodes)."""
    done = 0
    for _ in range(tries):
        if done == n:
            return tree
        inner = [p for p in range(tree.n_tips, tree.n_nodes) if tree.parent[p] >= 0]
        if not inner:
            return tree
        p = int(rng.choice(inner))
        q = int(tree.parent[p])
        kids = tree.children()
        a = kids[p][int(rng.integers(2))]
        c = int(rng.choice([x for x in kids[q] if x != p]))
        new = tree.copy()
        new.parent[a], new.parent[c] = q, p
        if cset is None or cset.violated(new) is None:
            tree, done = new, done + 1
    raise ModelError("mcmc nperts=%d: the start tree could not be perturbed without breaking a constraint" % n)


def start_trees(settings, groups, rng: np.random.Generator, pars=None, chain: tuple[int, int] = (0, 0)) -> list[Tree]:
    """A chain's start trees, one per tree of `groups` (mbgpu.tree_groups.TreeGroups), in their order.
    Trees sharing a topology (`unlink brlens` inside a linked topology) take the first's topology (its
    parent array, so MultNNI moves them alike) and their own branch lengths: startvals V{k}, else 0.02."""
    if len(groups) == 1:
        return [start_tree(settings, rng, pars[0] if pars else None, chain)]
    several_tau = groups.n_topologies > 1
    out: list[Tree] = []
    for k in range(len(groups)):
        first = groups.sharing(groups.tau(k))[0]
        if first == k:
            out.append(start_tree(settings, rng, pars[k] if pars else None, chain, groups.suffix(k),
                                  groups.tau_suffix(k) if several_tau else "", groups.tau_divisions(k)))
        else:
            out.append(_shared_start(settings, out[first], "V" + groups.suffix(k), chain))
    return out


def _shared_start(settings, first: Tree, v_key: str, chain: tuple[int, int]) -> Tree:
    """`first`'s topology with the branch lengths of startvals `v_key` (by split), else all 0.02."""
    tree = first.copy()
    v = settings.startval(v_key)
    grid = settings.startvals_grid
    if grid is not None and not (chain[0] < grid[0] and chain[1] < grid[1]) or \
            settings.mcmc.get("Starttree", "Current") in ("Random", "Parsimony"):
        v = None
    tree.brlen[tree.parent >= 0] = DEFAULT_BRLEN
    if v is None:
        return tree
    lengths = _split_lengths(user_tree(settings, v))
    mine = _node_splits(tree)
    if set(mine.values()) != set(lengths):
        raise ModelError("startvals: tree '%s' (%s) does not have the topology of tau" % (v, v_key))
    for node, split in mine.items():
        tree.brlen[node] = lengths[split]
    if np.any(tree.brlen[tree.parent >= 0] <= 0):
        raise ModelError("startvals: tree '%s' has a branch length that is not positive" % v)
    return tree


def _node_splits(tree: Tree) -> dict[int, frozenset[int]]:
    """Every branch (by its lower node) as the tip set on its side without tip 0 (tips too)."""
    kids = tree.children()
    below: dict[int, frozenset[int]] = {}
    everything = frozenset(range(tree.n_tips))
    out = {}
    for v in tree.postorder().tolist():
        below[v] = frozenset([v]) if v < tree.n_tips else frozenset().union(*(below[c] for c in kids[v]))
        if tree.parent[v] >= 0:
            out[v] = below[v] if 0 not in below[v] else everything - below[v]
    return out


def _split_lengths(tree: Tree) -> dict[frozenset[int], float]:
    """{split: branch length} of an unrooted tree (a degree-2 root's two branches joined)."""
    tree = tree.deroot()
    return {s: float(tree.brlen[v]) for v, s in _node_splits(tree).items()}
