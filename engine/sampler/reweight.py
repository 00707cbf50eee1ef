"""`mcmc reweight=(down,up[,increment])`: the heated chains run on reweighted data, as MrBayes 3.2.7a.

What MrBayes 3.2.7a does (mcmc.c FillNumSitesOfPat, AttemptSwap, LogLike, PrintSwapInfo; proposal.c's
parsimony moves), and mbgpu with it:

* Once, before the first generation, from the swap stream (MrBayes: swapSeed), for each heat rank
  j = 1..nchains-1 in turn (rank 0, the cold chain, keeps the data's weights): with n the number of
  characters (the pattern counts summed), int(n*down/100) times a character is drawn uniformly (a
  uniform u; the first pattern whose cumulative count / n exceeds u), again until its pattern has been
  lowered fewer times than it has characters, and that pattern's weight at rank j drops by `increment`;
  then as many times again (mcmc.c loops nToDecrease times here too, so `up` changes nothing but the
  screen line) a pattern is raised by `increment`, redrawn while raised + lowered reaches its count.
  The weights are the same for every run, drawn again by no later generation.
* A chain computes its likelihood on the weights of its heat rank (MrBayes' chainId % nchains), and
  ParsSPR its parsimony weights from them.
* A heat swap between chains A and B computes A's state on B's weights and B's on A's and accepts with
  ln r = hB (p lnL_A(B) + lnPr_A) + hA (p lnL_B(A) + lnPr_B) - hA (p lnL_A + lnPr_A) - hB (p lnL_B + lnPr_B)
  (p: the likelihood's power); when accepted, A's lnL becomes lnL_A(B) and B's lnL_B(A).
* MrBayes keeps each division's lnL of the current state (m->lnLike), and a proposal's lnL is the sum
  of the divisions it touched, recomputed, and the stored ones of the others; a swap leaves those stored
  values alone. mbgpu's chains keep each pattern set's lnL (`inc.lnl`) and, in a reweighted run, sum
  them after every proposal (`Chain.sum_parts`) instead of adding a difference to the chain's lnL.

* With several divisions MrBayes draws over all of them at once (numSitesOfPat holds every division's
  patterns one after the other; n counts every division's characters); each division's likelihood and
  ParsSPR's scores then use its part of the rank's weights. mbgpu draws over all its pattern sets the
  same way (tree by tree: a character's chance is its count / n in any order).
* starttree=parsimony scores heat rank 1's weights for every chain's start tree (FindBestNode reads
  numSitesOfPat at (1 % numChains), after FillNumSitesOfPat has drawn them).
* append=yes: mbgpu keeps the ranks' weights in its checkpoint, so a continuation goes on with them.
* ss: the swaps raise every likelihood of ln r to the step's power (AttemptSwap's powerSS terms); the
  steps' contributions use the cold chain's lnL, on the data's own weights.

What mbgpu does not run yet with reweighting (`refusal`): a free rate multiplier (MrBayes' prior on
rate multipliers and its moves weigh divisions by their character counts) and MPI (MrBayes' MPI
AttemptSwap keeps only the last division's lnL of a state on the other's weights).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.errors import NotImplementedYet
from mbgpu.param_kinds import KIND, MULTIPLIERS

ACTIVE = 0.00001           # AttemptSwap: reweighting when down + up exceeds this
SHOWN = 0.0001             # FillNumSitesOfPat: the screen lines when down + up exceeds this


def scheme(mcmc: dict, nchains: int) -> tuple[float, float, float] | None:
    """(down, up, increment) of mcmc's Reweight when it reweights (two chains or more), else None."""
    value = tuple(mcmc.get("Reweight", (0.0, 0.0)))
    down, up = value[0], value[1]
    if nchains < 2 or down + up <= ACTIVE:
        return None
    return down, up, value[2] if len(value) > 2 else 1.0


def intro_lines(mcmc: dict, nchains: int, n_chars: int) -> list[str]:
    """FillNumSitesOfPat's screen lines (before the divisions' pattern counts)."""
    got = scheme(mcmc, nchains)
    if got is None or got[0] + got[1] <= SHOWN:
        return []
    down, up, _ = got
    return ["      Reweighting of characters for chains 1 to %d" % nchains,
            "         Decreasing weight of %d characters" % int(n_chars * down / 100.0),
            "         Increasing weight of %d characters" % int(n_chars * up / 100.0)]


def checked_intro(mcmc: dict, nchains: int, sets, mpi: bool, ratemult: bool = False) -> list[str]:
    """intro_lines for the data's pattern sets (per division); raises NotImplementedYet where a reweighted
    run cannot run yet (`ratemult`: the model has a free rate multiplier)."""
    if scheme(mcmc, nchains) is None:
        return []
    why = refusal(ratemult, mpi)
    if why:
        raise NotImplementedYet(why)
    return intro_lines(mcmc, nchains, int(sum(int(w) for group in sets for ps in group for w in ps.weights)))


def free_rate_multiplier(params) -> bool:
    """True when the free parameters (mbgpu.parameters.free_parameters) hold divisions' rate multipliers."""
    return any(KIND[p.kind].form == MULTIPLIERS for p in params)


def drawn_weights(mcmc: dict, nchains: int, tree_sets: list[list], rng, saved: dict | None = None):
    """Every heat rank's weights of all pattern sets (`tree_sets`: each tree's, mbgpu.sampler.setup.
    tree_pattern_sets), drawn from the swap stream `rng` before the chains are built, as MrBayes'
    FillNumSitesOfPat runs before its start trees; None when mcmc does not reweight. `saved` (append=yes:
    a checkpoint's datasets): its weights instead."""
    settings = scheme(mcmc, nchains)
    if settings is None:
        return None
    if saved is not None:
        if "reweight/weights" not in saved:
            raise CheckpointMismatch("the checkpoint holds no reweighted pattern counts: it was written without "
                                     "mcmc reweight")
        return list(np.asarray(saved["reweight/weights"], dtype=np.float64))
    data = np.concatenate([np.asarray(ps.weights, dtype=np.float64) for tree in tree_sets for ps in tree])
    return draw(data, nchains, settings[0], settings[2], rng)


def parsimony_weights(flat, tree_sets: list[list]):
    """Each tree's weights that starttree=parsimony scores in a reweighted run: heat rank 1's, for every
    chain (MrBayes' FindBestNode reads numSitesOfPat at (1 % numChains)); None without reweighting."""
    if flat is None:
        return None
    ends = np.cumsum([0] + [sum(len(ps.weights) for ps in tree) for tree in tree_sets])
    return [flat[1][a:b] for a, b in zip(ends[:-1], ends[1:])]


def for_runs(mcmc: dict, nchains: int, runs: list[list], flat, saved: dict | None = None) -> "Reweighting | None":
    """The started Reweighting of these runs on `flat` (drawn_weights; None: no reweighting): every chain
    at its start rank, its position, or (`saved`: a checkpoint's datasets) at its checkpointed rank, its
    lnL to come back with its state."""
    if flat is None:
        return None
    weights = Reweighting(runs, scheme(mcmc, nchains), flat)
    if saved is not None:
        weights.place(runs, [list(map(int, row)) for row in saved["mc3/ranks"]])
    else:
        weights.start(runs, [list(range(nchains)) for _ in runs])
    return weights


def refusal(ratemult: bool, mpi: bool) -> str | None:
    """Why a reweighted run cannot run yet (None: it can); the message for NotImplementedYet. `ratemult`:
    the divisions have a free rate multiplier (prset ratepr=variable)."""
    if mpi:
        return "mcmc reweight under MPI is not supported yet"
    if ratemult:
        return "mcmc reweight with a free rate multiplier (prset ratepr=variable) is not supported yet"
    return None


def draw(w0: np.ndarray, nchains: int, down: float, increment: float, rng) -> list[np.ndarray]:
    """Every heat rank's pattern weights (rank 0: `w0` itself), drawn as MrBayes' FillNumSitesOfPat
    draws them from `rng`'s uniforms."""
    n = int(sum(int(w) for w in w0))
    cdf = np.cumsum(w0 / n)                 # MrBayes adds numSitesOfPat[k] / n in order, as cumsum does
    count = int(n * down / 100.0)
    ranks = [w0]
    for _ in range(1, nchains):
        w, lowered, raised = w0.copy(), np.zeros(len(w0)), np.zeros(len(w0))
        for _ in range(count):
            k = _pick(cdf, rng, lambda k: lowered[k] < w0[k])
            lowered[k] += 1
            w[k] -= increment
        for _ in range(count):
            k = _pick(cdf, rng, lambda k: raised[k] + lowered[k] < w0[k])
            raised[k] += 1
            w[k] += increment
        ranks.append(w)
    return ranks


def _pick(cdf: np.ndarray, rng, ok) -> int:
    """A pattern drawn with probability its count / n, again until ok(pattern)."""
    while True:
        k = int(cdf.searchsorted(rng.random(), side="right"))
        if k < len(cdf) and ok(k):
            return k


class Reweighting:
    """The heat ranks' weights of a run's pattern sets and ParsSPR contexts; sets a chain's to its rank."""

    def __init__(self, runs: list[list], settings: tuple[float, float, float], flat: list[np.ndarray]):
        """`flat`: every heat rank's weights of all pattern sets, tree by tree (`data_weights`' order)."""
        self.scheme, self.flat = settings, flat
        first = runs[0][0]
        data = data_weights(runs)
        if len(flat) != len(runs[0]) or any(np.shape(w) != (sum(len(d) for d in data),) for w in flat):
            raise CheckpointMismatch("the checkpoint's reweighted pattern counts are not this data's")
        cuts = np.cumsum([len(w) for w in data])[:-1]
        ends = np.cumsum([0] + [len(c.pattern_masks) for c in first.ctxs])
        by_tree = [[ws[ends[k]:ends[k + 1]] for k in range(len(first.ctxs))]
                   for ws in (np.split(w, cuts) for w in flat)]                # [rank][tree][pattern set]
        self.contexts = [[_on_weights(c, t[k]) for k, c in enumerate(first.ctxs)] for t in by_tree]
        self.weights = [_in_part_order(first.parts, t) for t in by_tree]      # [rank][the chain's parts]

    @classmethod
    def drawn(cls, runs: list[list], settings: tuple[float, float, float], rng) -> "Reweighting":
        """The ranks' weights drawn over every pattern set of every division from `rng` (tree by tree, each
        tree's divisions in order: the chance of each character is its count / n in any order)."""
        flat = draw(np.concatenate(data_weights(runs)), len(runs[0]), settings[0], settings[2], rng)
        return cls(runs, settings, flat)

    def capture(self) -> dict:
        """The weights as a checkpoint dataset ([rank, pattern]): a continuation uses them again."""
        return {"reweight/weights": np.array(self.flat, dtype=np.float64)}

    def place(self, runs: list[list], ranks: list[list[int]]) -> None:
        """Every chain on its rank's weights, its lnL left to be restored (a continuation)."""
        for chains, rank in zip(runs, ranks):
            for pos, chain in enumerate(chains):
                self.take_rank(chain, rank[pos])
                chain.sum_parts = True

    def start(self, runs: list[list], ranks: list[list[int]]) -> None:
        """Give every chain its rank's weights and its likelihood on them (the initial lnL MrBayes prints)."""
        for chains, rank in zip(runs, ranks):
            for pos, chain in enumerate(chains):
                self.take_rank(chain, rank[pos])
                for part in chain.parts:
                    part.inc.lnl = part.inc._root(part.inc.tree)
                chain.lnl = chain.best_lnl = sum(part.inc.lnl for part in chain.parts)
                chain.sum_parts = True

    def take_rank(self, chain, rank: int) -> None:
        """From now on `chain` computes on rank `rank`'s weights (its pattern sets' stored lnL unchanged)."""
        chain.weight_rank = rank
        chain.ctxs = self.contexts[rank]
        for part, w in zip(chain.parts, self.weights[rank]):
            _set_weights(part.inc, w)

    def lnl_on(self, chain, rank: int) -> float:
        """The log likelihood of `chain`'s current state on rank `rank`'s weights (AttemptSwap's
        lnLikeStateAonDataB); the chain keeps its own weights."""
        total = 0.0
        for part, w in zip(chain.parts, self.weights[rank]):
            _set_weights(part.inc, w)
            total += part.inc._root(part.inc.tree)
        for part, w in zip(chain.parts, self.weights[chain.weight_rank]):
            _set_weights(part.inc, w)
        return total


def data_weights(runs: list[list]) -> list[np.ndarray]:
    """The data's pattern weights of every pattern set, tree by tree (each tree's move context's)."""
    return [np.asarray(w, dtype=np.float64) for c in runs[0][0].ctxs for _, w in c.pattern_masks]


def _on_weights(ctx, weights: list[np.ndarray]):
    """A tree's move context whose ParsSPR data carry `weights` (its pattern sets', in order)."""
    assert len(weights) == len(ctx.pattern_masks)
    return replace(ctx, pattern_masks=[(m, w) for (m, _), w in zip(ctx.pattern_masks, weights)], prepared={})


def _in_part_order(parts, by_tree: list[list[np.ndarray]]) -> list[np.ndarray]:
    """The weights of a chain's parts (pattern sets) from each tree's list: a tree's parts are its pattern
    sets in the order of its context's."""
    taken = [iter(ws) for ws in by_tree]
    return [next(taken[part.tree]) for part in parts]


def _set_weights(inc, weights: np.ndarray) -> None:
    inc.weights = weights
    inc.backend.set_pattern_weights(weights)
