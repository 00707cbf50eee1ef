"""A tiny Metropolis-Hastings driver for the move tests: no data, so the target is the prior."""
from __future__ import annotations

import math

import numpy as np

from mbgpu.commands.params import parse_prior_text
from mbgpu.moves.base import BRLENS_MAX, BRLENS_MIN, MoveContext
from mbgpu.priors import brlens_log_prior
from mbgpu.tree import Tree, random_tree

EXP10 = "Unconstrained:Exponential(10)"
GAMMADIR = "Unconstrained:GammaDir(1,0.1,1,1)"


def log_prior(prior, tree: Tree) -> float:
    edges = np.flatnonzero(tree.parent >= 0)
    return brlens_log_prior(prior, tree.brlen[edges], edges < tree.n_tips)


def start_tree(n_tips: int, seed: int) -> Tree:
    return random_tree(n_tips, np.random.default_rng(seed), brlen=0.02)


def run_chain(moves, probs, prior_text: str, n_tips: int, n_samples: int, thin: int, seed: int,
              ctx_kwargs=None):
    """Sample (topology splits, tip-0 branch, tree length) every `thin` steps; returns lists and rate."""
    rng = np.random.default_rng(seed)
    prior = parse_prior_text(prior_text)
    ctx = MoveContext(n_tips=n_tips, brlens_prior=prior, **(ctx_kwargs or {}))
    tree = start_tree(n_tips, seed)
    lp = log_prior(prior, tree)
    cum = np.cumsum(probs) / np.sum(probs)
    topo, branch, length = [], [], []
    accepted = tries = 0
    for _ in range(n_samples):
        for _ in range(thin):
            move = moves[int(np.searchsorted(cum, rng.random(), side="right"))]
            prop = move.propose(tree, rng, ctx)
            tries += 1
            if prop.aborted:
                continue
            lp_new = log_prior(prior, prop.tree)
            if math.log(rng.random()) < lp_new - lp + prop.log_hastings:
                tree, lp = prop.tree, lp_new
                accepted += 1
        topo.append(frozenset(tree.splits()))
        branch.append(float(tree.brlen[0]))
        length.append(tree.total_length())
    return topo, np.array(branch), np.array(length), accepted / tries


def prior_reference(prior_text: str, n_tips: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """iid draws of (one branch, tree length) from the brlens prior (truncation ignored)."""
    rng = np.random.default_rng(seed)
    n_br = 2 * n_tips - 3
    if "Exponential" in prior_text:
        b = rng.exponential(0.1, (n, n_br))
    else:
        b = rng.gamma(1.0, 10.0, (n, 1)) * rng.dirichlet(np.ones(n_br), n)
    b = np.clip(b, BRLENS_MIN, BRLENS_MAX)
    return b[:, 0], b.sum(axis=1)


def prior_tree(prior_text: str, n_tips: int, rng: np.random.Generator) -> Tree:
    """An exact draw from the prior: uniform topology, branch lengths from the brlens prior."""
    tree = random_tree(n_tips, rng)
    edges = np.flatnonzero(tree.parent >= 0)
    if "Exponential" in prior_text:
        b = rng.exponential(0.1, edges.size)
    else:
        b = rng.gamma(1.0, 10.0) * rng.dirichlet(np.ones(edges.size))
    tree.brlen[edges] = np.clip(b, 2 * BRLENS_MIN, BRLENS_MAX / 2)
    return tree


def run_from_prior(moves, probs, prior_text: str, n_tips: int, n_chains: int, steps: int, seed: int,
                   ctx_kwargs=None):
    """n_chains chains, each started from an exact prior draw and run `steps` MH steps.

    If the kernel leaves the prior invariant, the final states are again iid prior draws, so the
    tests need no thinning. Returns (topologies, tip-0 branch, tree length, acceptance rate, moved).
    """
    rng = np.random.default_rng(seed)
    prior = parse_prior_text(prior_text)
    ctx = MoveContext(n_tips=n_tips, brlens_prior=prior, **(ctx_kwargs or {}))
    cum = np.cumsum(probs) / np.sum(probs)
    topo, branch, length = [], [], []
    accepted = tries = moved = 0
    for _ in range(n_chains):
        tree = start = prior_tree(prior_text, n_tips, rng)
        lp = log_prior(prior, tree)
        for _ in range(steps):
            move = moves[int(np.searchsorted(cum, rng.random(), side="right"))]
            prop = move.propose(tree, rng, ctx)
            tries += 1
            if prop.aborted:
                continue
            lp_new = log_prior(prior, prop.tree)
            if math.log(rng.random()) < lp_new - lp + prop.log_hastings:
                tree, lp = prop.tree, lp_new
                accepted += 1
        moved += bool(np.any(tree.brlen != start.brlen) or np.any(tree.parent != start.parent))
        topo.append(frozenset(tree.splits()))
        branch.append(float(tree.brlen[0]))
        length.append(tree.total_length())
    return topo, np.array(branch), np.array(length), accepted / tries, moved / n_chains


def state_key(tree: Tree) -> frozenset:
    """The labelled unrooted tree with lengths: {(split of the branch, length)} (ids do not matter)."""
    kids = tree.children()
    below: dict[int, frozenset] = {}
    everything = frozenset(range(tree.n_tips))
    out = []
    for v in tree.postorder().tolist():
        below[v] = frozenset([v]) if v < tree.n_tips else frozenset().union(*(below[c] for c in kids[v]))
        if tree.parent[v] >= 0:
            side = below[v] if 0 not in below[v] else everything - below[v]
            out.append((side, float(tree.brlen[v])))
    return frozenset(out)
