"""What every tree move shares: the Proposal record, the move context, branch-length limits, the
Larget-Simon multiplier with MrBayes' reflection, and MrBayes' autotuning rule.

A move never modifies its input tree; it returns a new Tree and the log Hastings ratio (proposal ratio
including any Jacobian). The caller computes prior and likelihood ratios and accepts or rejects.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mbgpu.tree import Tree

BRLENS_MIN = 1e-8    # MrBayes bayes.h BRLENS_MIN
BRLENS_MAX = 100.0   # MrBayes bayes.h BRLENS_MAX
# Autotuning limits of a multiplier's lambda (assumed as in MrBayes' move table; see docs/moves.md).
LAMBDA_MIN = 1e-4
LAMBDA_MAX = 20.0


@dataclass
class Proposal:
    """A proposed state: `tree` (new object), `log_hastings` (log q(new->old)/q(old->new) + log Jacobian).

    `aborted` is True when the move could not be made (MrBayes' abortMove): the caller rejects it;
    then `tree` is the unchanged input and `log_hastings` is -inf. `touched` lists the nodes whose
    parent or branch length changed (their transition matrices must be recomputed; see dirty_nodes()),
    computed from `old` when asked for (the sampler finds them itself).
    `detail` says what the move did (e.g. {"subtree": s, "attach": u} for the SPR moves), for tests and logs.
    """

    tree: Tree
    log_hastings: float
    log_prior_ratio_hint: float | None = None
    aborted: bool = False
    old: Tree | None = field(default=None, repr=False, compare=False)
    detail: dict = field(default_factory=dict)

    @property
    def touched(self) -> np.ndarray:
        if self.old is None:
            return np.zeros(0, np.int64)
        old, new = self.old, self.tree
        return np.flatnonzero((old.parent != new.parent) | (old.brlen != new.brlen)).astype(np.int64)


@dataclass
class MoveContext:
    """What a move may need besides the tree.

    pattern_masks: per partition (uint32 state-set masks [n_tips, n_patterns], pattern weights);
    n_states / rate_mults: per partition (default: inferred from the masks / 1.0), used by ParsSPR;
    brlens_prior: the `brlenspr` PriorValue (Unconstrained:...); anchor: the tip MrBayes roots at
    internally (its outgroup), used by ParsSPR and Nodeslider to orient branches; parsimony: an object
    computing ParsSPR's costs elsewhere (the GPU), or None for numpy; prepared: what moves derive from the
data once (ParsSPR's bit planes and weight-noise plans), shared by the chains that share the context.
    """

    n_tips: int
    brlens_prior: Any = None
    pattern_masks: Sequence[tuple[np.ndarray, np.ndarray]] = ()
    n_states: Sequence[int] | None = None
    rate_mults: Sequence[float] | None = None
    anchor: int = 0
    parsimony: Any = None      # mbgpu.cuda.parsimony.GpuParsimony when the likelihood runs on a GPU
    constraints: Any = None    # mbgpu.constraints.ConstraintSet: topology proposals that break one are rejected
    prepared: dict = field(default_factory=dict, repr=False, compare=False)   # per-data caches of moves


def brlen_bounds(prior: Any) -> tuple[float, float]:
    """Branch-length limits: [BRLENS_MIN, BRLENS_MAX], narrowed by a uniform brlens prior."""
    sub = getattr(prior, "sub", None)
    if sub is not None and sub.kind == "Uniform":
        lo, hi = map(float, sub.args)
        return max(lo, BRLENS_MIN), min(hi, BRLENS_MAX)
    return BRLENS_MIN, BRLENS_MAX


def reflect(x: float, lo: float, hi: float) -> float:
    """MrBayes' multiplicative reflection into [lo, hi] (x -> lo^2/x, x -> hi^2/x)."""
    while x < lo or x > hi:
        if x < lo:
            x = lo * lo / x
        if x > hi:
            x = hi * hi / x
    return x


def multiply(x: float, lam: float, rng: np.random.Generator, lo: float, hi: float) -> tuple[float, float]:
    """Larget-Simon multiplier x * exp(lam (u - 1/2)), reflected; returns (new, log proposal ratio)."""
    new = reflect(x * math.exp(lam * (rng.random() - 0.5)), lo, hi)
    return new, math.log(new / x)


def autotune_multiplier(value: float, acceptance_rate: float, target: float, batch: int,
                        lo: float = LAMBDA_MIN, hi: float = LAMBDA_MAX) -> float:
    """MrBayes AutotuneMultiplier: log lambda moves by min(0.01, 1/sqrt(batch)) toward the target rate."""
    delta = min(0.01, 1.0 / math.sqrt(max(batch, 1)))
    new = math.exp(math.log(value) + (delta if acceptance_rate > target else -delta))
    return new if lo < new < hi else value


class Move:
    """A tree move: `name`, `weight` (MrBayes default), `tuning` dict, `target` (None: not autotuned)."""

    name = "Move"
    weight = 0.0
    target: float | None = None

    def __init__(self, **tuning: float):
        self.tuning: dict[str, float] = dict(self.default_tuning())
        unknown = set(tuning) - set(self.tuning)
        if unknown:
            raise ValueError("%s has no tuning parameter %s" % (self.name, ", ".join(sorted(unknown))))
        self.tuning.update({k: float(v) for k, v in tuning.items()})
        self.batches = 0

    @classmethod
    def default_tuning(cls) -> dict[str, float]:
        return {}

    def propose(self, tree: Tree, rng: np.random.Generator, ctx: MoveContext) -> Proposal:
        raise NotImplementedError

    def tune(self, acceptance_rate: float) -> None:
        """One autotuning batch (call every `tunefreq` tries with that batch's acceptance rate)."""
        if self.target is None:
            return
        self.batches += 1
        self.tuning["lambda"] = autotune_multiplier(self.tuning["lambda"], acceptance_rate,
                                                    self.target, self.batches)

    def __repr__(self) -> str:
        args = ", ".join("%s=%g" % kv for kv in self.tuning.items())
        return "%s(%s)" % (self.name, args)


def make_proposal(old: Tree, new: Tree, log_hastings: float) -> Proposal:
    """A Proposal whose `touched` are the nodes whose parent or branch length differ between old and new."""
    return Proposal(new, float(log_hastings), old=old)


def aborted(tree: Tree) -> Proposal:
    """MrBayes' abortMove: nothing proposed; the caller counts a rejected try."""
    return Proposal(tree.copy(), -math.inf, aborted=True)
