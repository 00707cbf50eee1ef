"""One Markov chain: its state (tree, parameter values, lnL, lnPr), its likelihood caches, its moves,
and one Metropolis-Hastings step at a given heat.

The heat multiplies the log likelihood and log prior ratios, not the Hastings ratio (MrBayes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mbgpu.errors import ModelError
from mbgpu.sampler.incremental import IncrementalPartition
from mbgpu.sampler.model_state import ModelCache, rate_multiplier, spec_with_values
from mbgpu.sampler.param_moves import ParamMove, record
from mbgpu.tree import Tree


@dataclass
class PartSlot:
    """A pattern set's incremental likelihood and how to rebuild its model."""

    inc: IncrementalPartition
    division: int  # 1-based
    spec: object  # the base ModelSpec (fixed values)
    fixed_mult: float
    tree: int = 0  # the 0-based tree of the chain it lies on (several with `unlink topology`)


@dataclass
class TreeContext:
    """What tree moves may consult (ParsSPR: the data; some moves: the brlens prior)."""

    pattern_masks: list
    brlens_prior: object
    n_tips: int


def _choice_cdf(p: np.ndarray) -> np.ndarray:
    """The cumulative table Generator.choice(n, p=p) builds, so one uniform draw and a search pick an
    index exactly as choice does (the same draws, without choice's per-call checks)."""
    cdf = p.cumsum()
    cdf /= cdf[-1]
    return cdf


class Chain:
    """A chain at a fixed position (run, index); heats move between positions by swaps. Its state holds
    one tree, or one per tree of `unlink topology` (`trees`; `ctxs`: each tree's move context)."""

    def __init__(self, run: int, index: int, rng, trees: list[Tree], values: list, parts: list[PartSlot],
                 moves: list, prior_fn, ctxs: list[TreeContext], params, models: ModelCache):
        self.run, self.index, self.rng = run, index, rng
        self._core, self.stale, self.core_rng = None, False, None
        self.trees, self.values = list(trees), [np.array(v, dtype=np.float64) for v in values]
        self.parts, self.moves, self.prior_fn, self.ctxs = parts, moves, prior_fn, ctxs
        self.params, self.models = params, models
        self.weights = np.array([m.weight for m in moves], dtype=np.float64)
        self.weights /= self.weights.sum()
        self._move_cdf = _choice_cdf(self.weights)
        self._terms = None          # (tree, values, brlens term, parameter terms) of the current state
        self.sum_parts = False      # mcmc reweight: a proposal's lnL sums every pattern set's (mbgpu.sampler.reweight)
        self.lnl = self._initial_lnl()
        self.lnpr = prior_fn.of_trees(self.trees, self.values)
        self.best_lnl = self.lnl

    # -- state, possibly held by the compiled core (mbgpu.core.stepper) ---------------------------
    def attach_core(self, stepper, slot: int) -> None:
        """From now on `stepper` steps this chain (its row `slot`); reads pull the state back."""
        self._core = (stepper, slot)

    def pull(self) -> None:
        """Bring tree, values, moves and random state up to date from the core (after its steps)."""
        if self.stale:
            self.stale = False
            stepper, slot = self._core
            stepper.export(slot, self)

    def set_state(self, trees: list[Tree], values: list) -> None:
        """The chain's trees and values as the compiled core holds them (its export)."""
        self._trees, self._values = trees, values

    @property
    def trees(self) -> list[Tree]:
        self.pull()
        return self._trees

    @trees.setter
    def trees(self, trees: list[Tree]) -> None:
        assert self._core is None, "the compiled core holds this chain's state"
        self._trees = trees

    @property
    def tree(self) -> Tree:
        """The chain's tree, where it has one (several trees are read through `trees`)."""
        trees = self.trees
        assert len(trees) == 1, "this chain has %d trees: read chain.trees" % len(trees)
        return trees[0]

    @tree.setter
    def tree(self, tree: Tree) -> None:
        self.trees = [tree]

    @property
    def ctx(self) -> TreeContext:
        """The move context of the chain's one tree (the compiled core's)."""
        assert len(self.ctxs) == 1
        return self.ctxs[0]

    @property
    def values(self) -> list:
        self.pull()
        return self._values

    @values.setter
    def values(self, values: list) -> None:
        assert self._core is None, "the compiled core holds this chain's state"
        self._values = values

    @property
    def moves(self) -> list:
        self.pull()
        return self._moves

    @moves.setter
    def moves(self, moves: list) -> None:
        assert self._core is None, "the compiled core holds this chain's state"
        self._moves = moves

    def trade_heat_stats(self, other: "Chain") -> None:
        """This chain and `other` swapped heats: they trade the move counters, tuning and best lnL, which in
        MrBayes belong to a heat (indexed by chainId), not to a chain's state."""
        held, held_other = self._core, other._core
        if held is not None:
            held[0].exchange(held[1], held_other[1])
        self._moves, other._moves = other._moves, self._moves
        self.best_lnl, other.best_lnl = other.best_lnl, self.best_lnl

    def heat_stats(self) -> tuple:
        """(moves, best lnL): what goes with this chain's heat, to hand to the chain that takes it."""
        return self.moves, self.best_lnl

    def take_heat_stats(self, stats: tuple) -> None:
        """Adopt the statistics of the heat this chain now has (heat_stats of the chain that had it)."""
        moves, best = stats
        self._moves, self.best_lnl = moves, best
        if self._core is not None:
            stepper, slot = self._core
            stepper.take_stats(slot, moves, best)

    # -- likelihood ------------------------------------------------------------------------
    def _model_of(self, part: PartSlot, values):
        return self.models.get(spec_with_values(part.spec, self.params, values, part.division))

    def _initial_lnl(self) -> float:
        total = 0.0
        for part in self.parts:
            mult = rate_multiplier(self.params, self.values, part.division, part.fixed_mult)
            total += part.inc.propose(self.trees[part.tree], self._model_of(part, self.values), mult)
            part.inc.accept()
        if not math.isfinite(total):
            raise ModelError("the starting state of run %d chain %d has log likelihood %s: check the data and "
                             "starting values" % (self.run + 1, self.index + 1, total))
        return total

    def _propose_params(self, move: ParamMove):
        got = move.propose(self.values[move.param], self.rng)
        if got is None:
            return None
        new_value, log_h = got
        values = list(self.values)
        values[move.param] = new_value
        divs = set(self.params[move.param].divisions)
        touched = [part for part in self.parts if part.division in divs]
        old = sum(part.inc.lnl for part in touched)
        for part in touched:
            mult = rate_multiplier(self.params, values, part.division, part.fixed_mult)
            part.inc.stage(self.trees[part.tree], self._model_of(part, values), mult)
        return self.trees, values, log_h, touched, old

    def _propose_tree(self, move):
        if getattr(move, "shared", None) is not None:
            return self._propose_shared(move)
        k = move.tree
        prop = move.propose(self.trees[k], self.rng, self.ctxs[k])
        if prop is None:
            return None
        trees = list(self.trees)
        trees[k] = prop.tree
        touched = [part for part in self.parts if part.tree == k]
        old = sum(part.inc.lnl for part in touched)
        for part in touched:
            part.inc.stage(prop.tree)
        return trees, self.values, float(prop.log_hastings), touched, old

    def _propose_shared(self, move):
        """MultNNI: one NNI on every tree of a topology (each keeps its branch lengths); log Hastings 0."""
        from mbgpu.sampler.tree_move_slot import propose_shared

        ks = move.shared
        moved = propose_shared(move, [self.trees[k] for k in ks], self.rng, self.ctxs[ks[0]])
        if moved is None:
            return None
        trees = list(self.trees)
        for k, tree in zip(ks, moved):
            trees[k] = tree
        touched = [part for part in self.parts if part.tree in ks]
        old = sum(part.inc.lnl for part in touched)
        for part in touched:
            part.inc.stage(trees[part.tree])
        return trees, self.values, 0.0, touched, old

    def _log_prior(self, trees: list[Tree], values: list):
        """(log prior of a proposed state, its cached terms): only the terms the proposal changed are
        recomputed (a tree move: that tree's branch lengths; a parameter move: that parameter), summed
        as always."""
        pf = self.prior_fn
        t = self._terms
        if t is None or t[0] is not self.trees or t[1] is not self.values:
            t = self._terms = (self.trees, self.values, [pf.brlens(tr, k) for k, tr in enumerate(self.trees)],
                               pf.parameters(self.values))
        brlens = t[2] if trees is self.trees else \
            [b if new is old else pf.brlens(new, k) for k, (b, new, old) in enumerate(zip(t[2], trees, self.trees))]
        terms = t[3]
        if values is not self.values:
            terms = [lp if new is old else pf.parameter(k, new)
                     for k, (lp, new, old) in enumerate(zip(terms, values, self.values))]
        return pf.total_of_trees(brlens, trees, terms), (trees, values, brlens, terms)

    # -- one step ----------------------------------------------------------------------------
    def step(self, heat: float, tunefreq: int, autotune: bool, power: float = 1.0) -> None:
        """Pick a move by weight, propose, accept or reject (restoring caches on rejection)."""
        from mbgpu.sampler.batch_step import flush_chains

        pending = self.begin_step()
        flush_chains([self])
        self.end_step(pending, heat, tunefreq, autotune, power)

    def begin_step(self):
        """Pick a move and propose; the likelihood work is queued (batched) or done (per-chain path)."""
        move = self.moves[int(self._move_cdf.searchsorted(self.rng.random(), side="right"))]
        got = self._propose_params(move) if isinstance(move, ParamMove) else self._propose_tree(move)
        return move, got, None

    def prepare_step(self, pending):
        """Between launch and collect (the device is busy): the proposal's log prior, which does not
        depend on the likelihood. Returns what end_step takes."""
        move, got, prior = pending
        if got is None or prior is not None:
            return pending
        return move, got, self._log_prior(got[0], got[1])

    def end_step(self, pending, heat: float, tunefreq: int, autotune: bool, power: float = 1.0) -> None:
        """After the flush: accept or reject the proposal of begin_step() (or of prepare_step()); the
        likelihood ratio at `power` (a stepping-stone step's; 1.0, exact, in mcmc)."""
        move, got, prior = pending
        if got is None:
            record(move, False, tunefreq, autotune)
            self.best_lnl = max(self.best_lnl, self.lnl)
            return
        trees, values, log_h, touched, old = got
        if self.sum_parts:      # the untouched pattern sets' stored lnL, maybe on a former rank's weights
            lnl = sum(p.inc.lnl for p in self.parts)
        else:
            lnl = self.lnl + sum(p.inc.lnl for p in touched) - old
        if math.isnan(lnl) or lnl == math.inf:
            raise ModelError("a proposal of %s gave log likelihood %s (run %d, chain %d)"
                             % (move.name, lnl, self.run + 1, self.index + 1))
        lnpr, terms = prior if prior is not None else self._log_prior(trees, values)
        log_r = heat * (power * (lnl - self.lnl) + (lnpr - self.lnpr)) + log_h
        accepted = lnl > -math.inf and lnpr > -math.inf and (log_r >= 0 or math.log(self.rng.random()) < log_r)
        for p in touched:
            (p.inc.accept if accepted else p.inc.reject)()
        if accepted:
            self.trees, self.values, self.lnl, self.lnpr = trees, values, lnl, lnpr
            self._terms = terms
        self.best_lnl = max(self.best_lnl, self.lnl)     # MrBayes' maxLnL0: after every step, at its heat
        record(move, accepted, tunefreq, autotune)
