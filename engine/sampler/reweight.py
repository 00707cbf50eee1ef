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

What mbgpu does not run yet with reweighting (`refusal`): several divisions (MrBayes' prior on rate
multipliers and its moves weigh divisions by their reweighted counts), MPI, ss, append=yes and
starttree=parsimony (MrBayes scores that on rank 1's weights).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from mbgpu.errors import NotImplementedYet

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


def checked_intro(mcmc: dict, nchains: int, sets, mpi: bool, ss: bool) -> list[str]:
    """intro_lines for the data's pattern sets (per division); raises NotImplementedYet where a reweighted
    run cannot run yet."""
    if scheme(mcmc, nchains) is None:
        return []
    why = refusal(mcmc, len(sets), mpi, ss)
    if why:
        raise NotImplementedYet(why)
    return intro_lines(mcmc, nchains, int(sum(int(w) for group in sets for ps in group for w in ps.weights)))


def for_runs(mcmc: dict, nchains: int, runs: list[list], rng) -> "Reweighting | None":
    """The started Reweighting of these runs (every chain at its start rank, its position), drawn from the
    swap stream `rng`; None when mcmc does not reweight."""
    settings = scheme(mcmc, nchains)
    if settings is None:
        return None
    weights = Reweighting(runs, settings, rng)
    weights.start(runs, [list(range(nchains)) for _ in runs])
    return weights


def refusal(mcmc: dict, n_divisions: int, mpi: bool, ss: bool) -> str | None:
    """Why a reweighted run cannot run yet (None: it can); the message for NotImplementedYet."""
    if mcmc.get("Append") == "Yes":
        return "mcmc reweight with append=yes is not supported yet"
    if ss:
        return "ss with reweight is not supported yet"
    if mpi:
        return "mcmc reweight under MPI is not supported yet"
    if n_divisions > 1:
        return "mcmc reweight with a partitioned data set (%d divisions) is not supported yet" % n_divisions
    if mcmc.get("Starttree") == "Parsimony":
        return "mcmc reweight with starttree=parsimony is not supported yet"
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

    def __init__(self, runs: list[list], settings: tuple[float, float, float], rng):
        self.scheme = settings
        first = runs[0][0]
        ctx = first.ctxs[0]
        sizes = [len(w) for _, w in ctx.pattern_masks]
        w0 = np.concatenate([np.asarray(w, dtype=np.float64) for _, w in ctx.pattern_masks])
        flat = draw(w0, len(runs[0]), settings[0], settings[2], rng)
        cuts = np.cumsum(sizes)[:-1]
        self.weights = [np.split(w, cuts) for w in flat]            # [rank][pattern set]
        self.contexts = [[replace(c, pattern_masks=[(m, w) for (m, _), w in zip(c.pattern_masks, ws)],
                                  prepared={}) for c in first.ctxs] for ws in self.weights]

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


def _set_weights(inc, weights: np.ndarray) -> None:
    inc.weights = weights
    inc.backend.set_pattern_weights(weights)
