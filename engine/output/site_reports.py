"""`report siterates=yes` and `report ancstates=yes`: the per-site `.p` columns MrBayes 3.2.7a adds.

Site rates, `r(j)` for every included character j of a division with rate variation: the posterior mean
of the site's rate given the sampled tree and parameters (each gamma category's rate weighted by its
share of the site's likelihood; the invariable class has rate 0). Ancestral states, `p(X){j@NAME}` for
every hard constraint NAME of the topology prior, every included character j and each of its states X:
the marginal probability of X at the constrained node (the node whose clade, rooted at the outgroup,
is the constraint). Columns go division by division, then constraint, character and state, as in
MrBayes. Both are computed on the host by pruning in numpy at each sample (tested against mb-double).
"""
from __future__ import annotations

import numpy as np

from mbgpu import constraints
from mbgpu.models import build_model
from mbgpu.sampler.model_state import rate_multiplier, spec_with_values
from mbgpu.errors import NotImplementedYet
from mbgpu.tree import Tree
from mbgpu.tree_groups import tree_groups

_RATE_VARIATION = ("gamma", "propinv", "invgamma")


class _Set:
    """One pattern set: its base spec, tip partials, and the pattern of each of its characters."""

    def __init__(self, division: int, spec, ps, masks: np.ndarray):
        self.division, self.spec, self.ps = division, spec, ps
        self.tips = ps.tip_partials()
        full = np.uint32((1 << ps.n_states) - 1)
        index = {ps.masks[:, i].tobytes(): i for i in range(ps.n_patterns)}
        narrowed = masks[:, ps.columns] & full if ps.datatype == "standard" else masks[:, ps.columns]
        self.pattern_of = np.array([index[narrowed[:, c].tobytes()] for c in range(len(ps.columns))],
                                   dtype=np.int64)


def _constrained_clades(settings) -> list[tuple[str, frozenset]]:
    """(name, taxa) of the hard constraints whose nodes `report ancstates=yes` reports.

    Raises:
        NotImplementedYet: several trees (`unlink topology`) with constraints.
    """
    groups = tree_groups(settings)
    if len(groups) > 1:
        if any(constraints.active(settings, groups.tau_divisions(k)) is not None for k in range(len(groups))):
            raise NotImplementedYet("report ancstates=yes with topology constraints on unlinked trees is not "
                                    "supported yet")
        return []
    cset = constraints.active(settings)
    return [(c.name, c.taxa) for c in (cset.items if cset is not None else []) if c.kind == "hard"]


class SiteReports:
    """The report columns of an analysis and their values for a (tree, parameter values) state."""

    def __init__(self, settings, params, sets, models, fixed_mult):
        self.params, self.fixed_mult, self.outgroup = params, fixed_mult, settings.outgroup
        m = settings.matrix
        self.sets = [_Set(dm.index, spec, ps, m.masks) for dm in models for spec, ps in zip(dm.specs, dm.pattern_sets)
                     if ps.n_patterns]
        self.rates, self.ancestral = [], []
        for d in settings.divisions:
            report = getattr(d, "report", {})
            self.rates.append(report.get("Siterates") == "Yes" and d.lset["Rates"].lower() in _RATE_VARIATION)
            self.ancestral.append(report.get("Ancstates") == "Yes")
        self.clades = _constrained_clades(settings) if any(self.ancestral) else []
        self.symbols = {dt: m.states(dt) for dt in set(m.datatypes)}
        self.sites = [self._division_sites(d) for d in range(1, len(settings.divisions) + 1)]
        self.rate_label = _rate_labels(settings.divisions)
        self.columns = self._names()

    @staticmethod
    def wanted(settings) -> bool:
        return any(getattr(d, "report", {}).get(k) == "Yes" for d in settings.divisions
                   for k in ("Siterates", "Ancstates"))

    def _division_sites(self, division: int) -> list[tuple[int, "_Set", int]]:
        """(original column, set, position in the set) of a division's characters, by column."""
        out = [(int(c), s, i) for s in self.sets if s.division == division for i, c in enumerate(s.ps.columns)]
        return sorted(out, key=lambda t: t[0])

    def _names(self) -> list[str]:
        names = []
        for d, want in enumerate(self.rates, 1):
            if want:
                names += ["r(%d)" % self.rate_label[c] for c, _s, _i in self.sites[d - 1]]
        for d, want in enumerate(self.ancestral, 1):
            if want:
                for name, _taxa in self.clades:
                    for c, s, _i in self.sites[d - 1]:
                        states = self.symbols[s.ps.datatype][:s.ps.n_states]
                        names += ["p(%s){%d@%s}" % (x, c + 1, name) for x in states]
        return names

    def values(self, tree_of, values) -> list[float]:
        """The report columns' values for one chain state (the order of `columns`); `tree_of(division)`:
        the Tree a 1-based division evolves on (several with unlinked topologies)."""
        rates, anc = {}, {}
        for s in self.sets:
            want_r, want_a = self.rates[s.division - 1], self.ancestral[s.division - 1]
            if not (want_r or want_a):
                continue
            model = build_model(spec_with_values(s.spec, self.params, values, s.division))
            tree = tree_of(s.division)
            mult = rate_multiplier(self.params, values, s.division, float(self.fixed_mult[s.division - 1]))
            if want_r:
                rates[id(s)] = _site_rates(tree, model, mult, s.tips)[s.pattern_of]
            if want_a:
                anc[id(s)] = [_ancestral(tree, model, mult, s.tips, _clade_node(tree, taxa, self.outgroup))
                              [s.pattern_of] for _name, taxa in self.clades]
        out: list[float] = []
        for d, want in enumerate(self.rates, 1):
            if want:
                out += [float(rates[id(s)][i]) for _c, s, i in self.sites[d - 1]]
        for d, want in enumerate(self.ancestral, 1):
            if want:
                for k in range(len(self.clades)):
                    for _c, s, i in self.sites[d - 1]:
                        out += anc[id(s)][k][i].tolist()
        return out


def _rate_labels(divisions) -> dict[int, int]:
    """MrBayes' number for a site-rate column: the character's place when the characters (excluded ones
    counted) are listed division by division, e.g. `r(2)` for character 4 of a by-codon partition (seen
    with mb-double: its values follow the divisions, its names count 1, 2, 3, ...). The ancestral-state
    columns keep the characters' own numbers, as MrBayes' do."""
    out, k = {}, 0
    for d in divisions:
        for c in sorted(int(x) for x in d.columns):
            k += 1
            out[c] = k
    return out


def _conditionals(tree: Tree, model, mult: float, tips: np.ndarray):
    """Per node: (partial [patterns, categories, states] scaled to max 1, log scale [patterns]) of the
    subtree below it, and the edges' transition matrices [node, categories, S, S]."""
    p = np.zeros((tree.n_nodes, model.n_categories, model.n_states, model.n_states))
    edges = np.flatnonzero(tree.parent >= 0)
    p[edges] = model.transition_matrices(tree.brlen[edges] * mult)
    kids = tree.children()
    part, scale = {}, {}
    for v in tree.postorder().tolist():
        if v < tree.n_tips:
            part[v] = np.repeat(tips[v][:, None, :], model.n_categories, axis=1)
            scale[v] = np.zeros(tips.shape[1])
            continue
        prod, log_s = 1.0, 0.0
        for c in kids[v]:
            prod = prod * np.einsum("kij,pkj->pki", p[c], part[c])
            log_s = log_s + scale[c]
        top = prod.max(axis=(1, 2))
        top[top == 0.0] = 1.0
        part[v], scale[v] = prod / top[:, None, None], log_s + np.log(top)
    return part, scale


def _invariable(model, tips: np.ndarray) -> np.ndarray:
    """[patterns, states]: pi_s where every tip allows state s (the invariable class' joint term)."""
    return np.prod(tips, axis=0) * model.frequencies[None, :]


def _site_rates(tree: Tree, model, mult: float, tips: np.ndarray) -> np.ndarray:
    """Posterior mean rate of every pattern."""
    part, scale = _conditionals(tree, model, mult, tips)
    root = tree.root
    per_cat = np.einsum("pks,s->pk", part[root], model.frequencies) * model.category_weights[None, :]
    with np.errstate(divide="ignore"):
        log_var = np.log(per_cat) + scale[root][:, None] + np.log1p(-model.pinvar)
        log_inv = np.log(_invariable(model, tips).sum(axis=1) * model.pinvar) if model.pinvar > 0 else None
    top = log_var.max(axis=1) if log_inv is None else np.maximum(log_var.max(axis=1), log_inv)
    w = np.exp(log_var - top[:, None])
    total = w.sum(axis=1) + (np.exp(log_inv - top) if log_inv is not None else 0.0)
    return (w * model.category_rates[None, :]).sum(axis=1) / total


def _clade_node(tree: Tree, taxa: frozenset, outgroup: int) -> int:
    """The internal node at the constraint's clade, with the tree rooted at the outgroup: the end of the
    clade's edge on the side away from the outgroup."""
    want = taxa if outgroup not in taxa else frozenset(range(tree.n_tips)) - taxa
    other = frozenset(range(tree.n_tips)) - want
    below: dict[int, frozenset] = {}
    kids = tree.children()
    for v in tree.postorder().tolist():
        below[v] = frozenset([v]) if v < tree.n_tips else frozenset().union(*(below[c] for c in kids[v]))
        if below[v] == want:
            return v
        if below[v] == other:
            return int(tree.parent[v])
    raise AssertionError("the tree lacks a constrained clade (the constraint check keeps it)")


def _ancestral(tree: Tree, model, mult: float, tips: np.ndarray, node: int) -> np.ndarray:
    """[patterns, states]: the marginal probability of each state at `node`."""
    rooted = tree.reroot(node)
    new_root = rooted.root
    part, scale = _conditionals(rooted, model, mult, tips)
    joint = part[new_root] * model.frequencies[None, None, :]                  # [p, k, s]
    var = joint.sum(axis=1) * (1.0 - model.pinvar) / model.n_categories          # [p, s], scaled
    if model.pinvar > 0:                         # the invariable class, unscaled: join in the log domain
        with np.errstate(divide="ignore"):
            log_var = np.log(var) + scale[new_root][:, None]
            log_inv = np.log(_invariable(model, tips) * model.pinvar)
        top = np.maximum(log_var.max(axis=1), log_inv.max(axis=1))[:, None]
        var = np.exp(log_var - top) + np.exp(log_inv - top)
    return var / var.sum(axis=1, keepdims=True)
