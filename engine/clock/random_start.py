"""A clock tree's random start state as MrBayes 3.2.7a builds it without `startvals tau=/v=` (model.c
FillTreeParams / FillTopologySubParams, utils.c BuildRandomRTopology, RandResolve, InitCalibratedBrlens,
SetNodeCalibratedAge, InitClockBrlens), and the clock parameters it draws at random (FillNormalParams).

Topology: uniform over rooted binary topologies (tips added one by one on a uniform branch) without
constraints; inside `topologypr=constraints(...)`, each node of the hard constraints' clade tree resolved by
joining random pairs of its members. Node ages (InitCalibratedBrlens, used when the tree has calibrations or
its prior is uniform, birth-death or fossilization): dated tips at their calibration's minimum (fixed: its
age), each dated node (and an undated root under treeagepr) at the larger of its calibration's minimum and
its oldest descendant's; the root then at 1.5 times that (1.5 when 0), capped by its maximum; undated
interior nodes spread evenly between the oldest age below them and the nearest dated ancestor. Depths are
ages times the start clock rate. Without calibrations under coalescence (InitClockBrlens): each node's depth
is its largest number of branches to a tip over the root's. Gen 0 is therefore deterministic given the
topology (measured with mb-double: TH 1.5 x rate for the uniform prior, whatever the seed).
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu import constraints
from mbgpu.clock.rooted import children, internal_postorder, root_of
from mbgpu.clock.start_tree import ClockStart, _calibration_arrays, _locked, _mrca, rooted_user_tree
from mbgpu.errors import ModelError, NotImplementedYet

AGE_PRIORS = ("uniform", "birthdeath", "fossilization")    # trees whose undated root follows treeagepr
ROOT_STRETCH = 1.5                                          # InitCalibratedBrlens' root = 1.5 x oldest below


def random_clock_start(settings, model, rng: np.random.Generator, divisions=None) -> ClockStart:
    """MrBayes' random start state of the clock tree of `model` (1-based `divisions`, default the model's):
    a random rooted topology inside the hard constraints and MrBayes' deterministic node ages.

    Raises:
        ModelError: calibrations no tree can satisfy (MrBayes' "Calibration inconsistency" sentences),
            hard constraints that overlap.
        NotImplementedYet: negative or partial constraints on a clock tree, `mcmc starttree=parsimony`,
            `mcmc nperts`.
    """
    divisions = tuple(model.divisions if divisions is None else divisions)
    _refuse_unsupported(settings)
    parent = random_topology(settings, rng, divisions)
    n = settings.matrix.ntax
    cal_kind, cal_params = _calibration_arrays(parent, model)
    return ClockStart(parent, children(parent), start_depths(parent, n, model), n, cal_kind, cal_params,
                      _locked(settings, parent, divisions), model.clock_rate_start)


def start_depths(parent: np.ndarray, n: int, model) -> np.ndarray:
    """FillTopologySubParams' node depths of the topology `parent`: InitCalibratedBrlens' ages times the
    start clock rate for a calibrated tree or a uniform/birth-death/FBD prior, else InitClockBrlens'."""
    if model.node_calibrations or model.tip_calibrations or model.tree_prior in AGE_PRIORS:
        return calibrated_ages(parent, n, model) * model.clock_rate_start
    return segment_depths(parent, n)


def _refuse_unsupported(settings) -> None:
    """`mcmc starttree=parsimony` and `nperts` (RandPerturb re-dates the tree after each NNI) on a clock tree
    are not copied from MrBayes yet."""
    if settings.mcmc.get("Starttree") == "Parsimony":
        raise NotImplementedYet("mcmc starttree=parsimony with a clock tree is not supported yet")
    if int(settings.mcmc.get("Nperts", 0)):
        raise NotImplementedYet("mcmc nperts with a clock tree is not supported yet")


def random_topology(settings, rng: np.random.Generator, divisions) -> np.ndarray:
    """The start topology (parent array, tips 0..n-1) of FillTreeParams: a fixed topology's user tree, a
    random resolution of the hard constraints, or a uniform random rooted tree."""
    pr = settings.topology_prior([d - 1 for d in divisions])
    n = settings.matrix.ntax
    if pr is not None and pr.kind == "Fixed":
        return rooted_user_tree(settings, pr.args[0]).parent
    clades = []
    if pr is not None and pr.kind == "Constraints":
        for c in constraints.named(settings, pr.args):
            if c.kind != "hard":
                raise NotImplementedYet("a random start tree of a clock model with %s constraint '%s' is not "
                                        "supported yet (give one: startvals tau=)" % (c.kind, c.name))
            if 2 <= len(c.taxa) < n:
                clades.append(c)
    return resolve_clades(n, clades, rng) if clades else uniform_rooted_topology(n, rng)


def uniform_rooted_topology(n: int, rng: np.random.Generator) -> np.ndarray:
    """BuildRandomRTopology: tips 0 and 1 joined, then tip i joined to one of the 2i - 1 branches (tips
    0..i-1, internal nodes n..n+i-2, the top one's branch included) drawn uniformly: every rooted binary
    topology equally likely."""
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    parent[0] = parent[1] = n
    for i in range(2, n):
        r = n + i - 1
        j = int(rng.random() * (2 * i - 1))
        p = j if j < i else n + j - i
        parent[r], parent[p], parent[i] = parent[p], r, r
    return parent


def resolve_clades(n: int, clades, rng: np.random.Generator) -> np.ndarray:
    """BuildConstraintTree + RandResolve for a rooted tree: the hard clades (Constraint objects, each 2 to
    n-1 taxa) nested into a clade tree, each of its nodes resolved by joining two of its members drawn
    uniformly until two are left (the root's) or one.

    Raises:
        ModelError: two clades overlap without one containing the other.
    """
    sets = sorted({frozenset(c.taxa) for c in clades}, key=len)
    for i, a in enumerate(sets):
        for b in sets[i + 1:]:
            if a & b and not a <= b:
                names = [c.name for c in clades if frozenset(c.taxa) in (a, b)]
                raise ModelError("hard constraints %s cannot hold in one tree (their groups overlap without one "
                                 "containing the other)" % " and ".join(names))
    parent = np.full(2 * n - 1, -1, dtype=np.int64)
    nxt = [n]

    def build(clade: frozenset) -> int:
        inner = [s for s in sets if s < clade and not any(s < t < clade for t in sets)]
        covered = frozenset().union(*inner)
        items = [build(s) for s in inner] + sorted(clade - covered)
        while len(items) > 1:
            i, j = sorted(rng.choice(len(items), 2, replace=False).tolist())
            b, a = items.pop(j), items.pop(i)
            parent[a] = parent[b] = nxt[0]
            items.append(nxt[0])
            nxt[0] += 1
        return items[0]

    build(frozenset(range(n)))
    return parent


def _age_limits(model, parent: np.ndarray, n: int):
    """Per node the calibration InitCalibratedBrlens dates it by (a Distribution; the tree-age prior at an
    undated root of a uniform/birth-death/FBD tree), and the name MrBayes' error gives it (None: the
    undated root)."""
    dist: dict = {}
    names: dict = {}
    top = root_of(parent)
    if model.tree_prior in AGE_PRIORS:
        dist[top], names[top] = model.tree_age, None
    for cal in model.node_calibrations + model.tip_calibrations:
        v = _mrca(parent, cal.taxa)
        dist[v], names[v] = cal.dist, cal.name
    return dist, names


def calibrated_ages(parent: np.ndarray, n: int, model) -> np.ndarray:
    """InitCalibratedBrlens' node ages (time units) of the rooted tree `parent`.

    Raises:
        ModelError: a calibration's maximum at or below the minimum age of a node under it (MrBayes'
            "Calibration inconsistency for node 'NAME'" / "for root node" and "Cannot make a tree ...").
    """
    dist, names = _age_limits(model, parent, n)
    kids = children(parent)
    low = np.zeros(parent.shape[0])                   # MrBayes' nodeDepth of the first pass: the youngest age
    age = np.full(parent.shape[0], -1.0)
    for v in range(n):
        d = dist.get(v)
        low[v] = age[v] = 0.0 if d is None else d.min
    for v in internal_postorder(parent, n):
        low[v] = max(low[kids[v, 0]], low[kids[v, 1]])
        d = dist.get(v)
        if d is not None:
            if d.max <= low[v]:
                where = "root node" if names[v] is None else "node '%s'" % names[v]
                raise ModelError("Calibration inconsistency for %s. Cannot make a tree where the node is %s"
                                 % (where, d.text()))
            low[v] = age[v] = max(low[v], d.min)
    top = root_of(parent)
    cap = dist[top].max if top in dist else math.inf
    start = low[top] if low[top] != 0.0 else 1.0
    age[top] = ROOT_STRETCH * start if ROOT_STRETCH * start < cap else cap
    _spread(parent, n, kids, age)
    return age


def _spread(parent: np.ndarray, n: int, kids: np.ndarray, age: np.ndarray) -> None:
    """SetNodeCalibratedAge: an undated interior node k branches below its nearest dated ancestor (age A)
    gets m + (A - m) / (k + 1), m its oldest child's age, children first (`age` -1 marks undated)."""
    post = internal_postorder(parent, n)
    level = np.zeros(parent.shape[0], dtype=np.int64)
    above = np.zeros(parent.shape[0])
    dated = age >= 0.0
    for v in post[::-1]:
        for c in kids[v]:
            level[c], above[c] = (2, age[v]) if dated[v] else (level[v] + 1, above[v])
    for v in post:
        if not dated[v]:
            m = max(age[kids[v, 0]], age[kids[v, 1]])
            age[v] = m + (above[v] - m) / level[v]


def segment_depths(parent: np.ndarray, n: int) -> np.ndarray:
    """InitClockBrlens: each node's depth = its largest number of branches down to a tip / the root's
    (root depth 1, substitution units, whatever the clock rate)."""
    kids = children(parent)
    steps = np.zeros(parent.shape[0])
    for v in internal_postorder(parent, n):
        steps[v] = max(steps[kids[v, 0]], steps[kids[v, 1]]) + 1.0
    return steps / steps[root_of(parent)]


def draw_start_values(model, rng: np.random.Generator) -> dict:
    """MrBayes' start values of the free clock parameters (ClockModel.starts()) with its random draws made
    (FillNormalParams): popsize, igrvar and tk02var under a uniform prior uniform in its range; cppRate an
    Exponential(lambda) draw."""
    out = model.starts()
    draws = {"popsize": model.popsize, "igrvar": model.igrvar, "tk02var": model.tk02var, "cppRate": model.cpprate}
    for key, value in out.items():
        if value is not None:
            continue
        prior = draws[key]
        if prior.family == "Uniform":
            out[key] = float(rng.uniform(prior.params[0], prior.params[1]))
        elif prior.family == "Exponential":
            out[key] = float(rng.exponential(1.0 / prior.params[0]))
        else:
            raise NotImplementedYet("the start value of %s under a %s prior is not supported yet"
                                    % (key, prior.family.lower()))
    return out
