"""The compiled core driving the chains of one process: their state moves into arrays at the first
generation, and every generation is `propose_all`, models for the chains whose parameter moves
changed one (host code, rare), a compiled likelihood per pattern set, and `decide_all`.

The chain objects (mbgpu.sampler.chain.Chain) stay what the loop, the output, the swaps and the
checkpoints read: their scores are written every generation; their tree, values, moves and random
state are written back when read (`Chain.pull`).
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.core import trees as T
from mbgpu.core.chain_generation import exchange_stats
from mbgpu.core.clock_moves import keep_clock
from mbgpu.core.clock_rows import ClockRows, empty_args
from mbgpu.core.constraint_check import per_tree
from mbgpu.core.device_division import DeviceDivision, device_backend
from mbgpu.core.division import PROP, DivisionArrays, host_buffers
from mbgpu.core.layout import MoveTable, ParamLayout, unsupported_move
from mbgpu.core.models import PriorTable, SetModel, model_proposal, param_log_prior
from mbgpu.core.pars_spr import PASS_RANKS, pars_threads, prepare_pars_data
from mbgpu.core.prior import CLOCK, brlens_log_prior, brlens_table
from mbgpu.core.step import decide_all, propose_all
from mbgpu.errors import ModelError
from mbgpu.moves.base import BRLENS_MAX, BRLENS_MIN, brlen_bounds
from mbgpu.param_kinds import KIND, RATIO, SIMPLEX
from mbgpu.sampler.model_state import rate_multiplier, spec_with_values


def unsupported(chains) -> str | None:
    """Why the compiled core cannot step these chains (None: it can)."""
    first = chains[0]
    clocks = getattr(first.prior_fn, "clocks", ())
    if clocks and len(first.trees) > 1:
        return "several trees with a clock tree"
    if getattr(first, "sum_parts", False):
        return "mcmc reweight (each heat rank's own pattern weights)"
    for part in first.parts:
        inc = part.inc
        shared = getattr(inc, "shared", None)         # a lane of a batched instance (batch_step.LanePartition)
        if shared is None or (host_buffers(shared.backend) is None and not device_backend(shared.backend)):
            return "a likelihood backend that the core cannot drive"
    for mv in first.moves:
        why = unsupported_move(mv)
        if why:
            return why
    if not clocks and any(brlens_table(first.prior_fn.brlens_prior(k), first.trees[0].n_tips) is None
                          for k in range(len(first.trees))):
        return "this branch-length prior"
    return None


def division_for(shared, lane_parts):
    """The core's view of one pattern set for every chain: on a device backend (CUDA) the buffers stay
    there and each generation is one packed flush; otherwise the core's own host buffers."""
    if device_backend(shared.backend):
        return DeviceDivision(shared, lane_parts)
    return DivisionArrays(shared, lane_parts)


class CoreStepper:
    """The compiled state of `chains` (one process' chains, in a fixed order) and their generations."""

    split_pars = True      # a site-split group splits ParsSPR's Fitch pass (benchmarks turn it off to compare)

    def __init__(self, chains):
        self.chains = chains
        first = chains[0]
        self.n_trees = len(first.trees)
        self.n_tips = first.trees[0].n_tips
        self.params, self.prior_fn = first.params, first.prior_fn
        self.layout = ParamLayout(self.params)
        self.trees = T.ChainTrees([tree for ch in chains for tree in ch.trees])    # chain c's tree t: row c R + t
        self.theta = np.stack([self.layout.pack(ch.values) for ch in chains])
        self.theta_p = self.theta.copy()
        self.moves = MoveTable(chains, self.layout)
        self.rng = np.stack([_stream(ch) for ch in chains])
        self.rng_out = self.rng.copy()          # each chain's random state after its last decision
        self.ahead = None                       # group 0's next generation, proposed and launched early
        self.ahead_stale = False                # a swap handed a chain of group 0 another heat's tuning since
        self._heats = ([], 0.0, None)           # (ranks, temp, heats) of the last heats_for
        ctx = first.ctxs[0]                # what the trees' contexts share: brlens prior, anchor
        clocks = getattr(self.prior_fn, "clocks", ())     # (a clock tree's moves keep their own bounds)
        self.lo, self.hi = (np.array(b) for b in zip(*((BRLENS_MIN, BRLENS_MAX) if clocks else
                                                       brlen_bounds(x.brlens_prior) for x in first.ctxs)))
        self.anchor = int(ctx.anchor)
        self.cons = per_tree([getattr(x, "constraints", None) for x in first.ctxs], self.n_tips)  # each tree's
        # topology constraints: proposals that break one are rejected
        self.threads = numba.get_num_threads()           # (also starts numba's pool)
        self.pars_threads = pars_threads(self.threads)
        self.held = False                                # numba's threads held at pars_threads (step)
        self.pars = tuple(prepare_pars_data(x.pattern_masks, x.n_states, x.rate_mults, n_tips=self.n_tips,
                                            threads=self.pars_threads) for x in first.ctxs)   # per tree: its data
        reduction = getattr(first.parts[0].inc.shared.backend, "pars_reduction", None) \
            if first.parts and self.split_pars else None
        for data in self.pars if reduction is not None else ():
            data[-1][PASS_RANKS:] = reduction()      # a site-split group: the Fitch pass split over its ranks
        tables = [(CLOCK, np.zeros(5)) if clocks else brlens_table(self.prior_fn.brlens_prior(k), self.n_tips)
                  for k in range(self.n_trees)]
        self.brl_kind = np.array([kind for kind, _ in tables], dtype=np.int64)      # per tree: its brlens prior
        self.brl_args = np.stack([args for _, args in tables])
        self.topology = self._topology_terms()
        n = len(chains)
        self.lnl = np.array([ch.lnl for ch in chains])
        self.lnpr = np.array([ch.lnpr for ch in chains])
        self.best = np.array([ch.best_lnl for ch in chains])
        # the chains' clock trees as rows (mbgpu.core.clock_rows), else empty rows of the same types
        self.clock = ClockRows([ch.trees[0] for ch in chains], ctx) if clocks else None
        self.ck = self.clock.args if clocks else empty_args(n)
        self.cpars = self.clock.pars if clocks else self.pars[0]    # ParsSPRClock's data (any of the type)
        if clocks:                                        # one clock tree per chain: its clock terms
            self.brl = self.clock.ln_priors().reshape(n, 1)
        else:
            self.brl = np.array([brlens_log_prior(self.brl_kind[r % self.n_trees], self.brl_args[r % self.n_trees],
                                                  self.trees.parent[r], self.trees.brlen[r], self.n_tips)
                                 for r in range(n * self.n_trees)]).reshape(n, self.n_trees)
        self.brl_p = self.brl.copy()
        self.pterm = np.array([self.prior_fn.parameters(ch.values) for ch in chains]).reshape(n, len(self.params))
        self.pterm_new = np.zeros(n)
        self.divisions = [division_for(first.parts[j].inc.shared, [ch.parts[j].inc for ch in chains])
                          for j in range(len(first.parts))]
        self.div_tree = np.array([part.tree for part in first.parts], dtype=np.int64)
        self.tree_views = [self.trees.of_tree(t, self.n_trees) for t in range(self.n_trees)]
        self.div_lnl = np.array([d.lnl for d in self.divisions]).reshape(len(self.divisions), n)
        self.div_lnl_p = self.div_lnl.copy()
        self.todo = np.zeros((len(self.divisions), n), dtype=np.int8)
        for j, d in enumerate(self.divisions):            # one home: the divisions see rows of these
            d.lnl, d.lnl_p, d.todo = self.div_lnl[j], self.div_lnl_p[j], self.todo[j]
            d.refresh(self.view(j))
        self.touches = [[j for j, part in enumerate(first.parts) if part.division in p.divisions]
                        for p in self.params]
        self.new_q = [KIND[p.kind].form in (SIMPLEX, RATIO) for p in self.params]   # a new Q; else new rates
        self.priors = PriorTable(self.params, self.prior_fn.n_chars, self.layout)
        self.set_models = [SetModel(part.spec, part.division, part.fixed_mult, self.params, self.layout)
                           if SetModel.describable(part.spec, self.params, part.division) else None
                           for part in first.parts]
        self.move_of = np.zeros(n, dtype=np.int64)
        self.log_h = np.zeros(n)
        self.moved = np.zeros(n, dtype=np.int64)
        self.accepted = np.zeros(n, dtype=np.bool_)
        self.by_param = np.zeros(n, dtype=np.int64)
        # groups of chains per generation: 2 when every pattern set is on a device (its flushes are queued
        # and the host works on the other group meanwhile), else 1 (the host computes)
        self.groups = 2 if all(isinstance(d, DeviceDivision) for d in self.divisions) else 1
        for c, ch in enumerate(chains):
            ch.attach_core(self, c)

    def _topology_terms(self) -> float:
        """The trees' topology terms summed as mbgpu.sampler.setup.Prior.total_of_trees sums them (one per
        Tau: a tree repeating an earlier one's topology adds none)."""
        pf = self.prior_fn
        topo = float(pf.topology(self.n_tips))
        for k in range(1, self.n_trees):
            if not (pf.repeats and pf.repeats[k]):
                topo += pf.topology(self.n_tips, k)
        return float(topo)

    def view(self, j: int):
        """The trees pattern set j's likelihood lies on, one row per chain (mbgpu.core.trees.ChainTrees)."""
        return self.tree_views[int(self.div_tree[j])]

    # -- one generation ------------------------------------------------------------------------
    def heats_for(self, ranks: list[list[int]], temp: float) -> np.ndarray:
        """Every chain's heat (mbgpu.sampler.swaps.heat of its position's rank), chains run by run; kept
        until a swap changes the ranks (building it costs more than a generation's decisions)."""
        seen, seen_temp, heats = self._heats
        if heats is None or ranks != seen or temp != seen_temp:
            r = np.array([x for rank in ranks for x in rank], dtype=np.float64)
            heats = 1.0 / (1.0 + temp * r)
            self._heats = ([list(rank) for rank in ranks], temp, heats)
        return heats

    def step(self, heats: np.ndarray, tunefreq: int, autotune: bool, power: float = 1.0) -> None:
        """One generation of every chain. On a GPU the chains go in `groups`: each group's likelihoods
        are launched as soon as it has proposed, so the device computes one group while the host
        proposes the next and decides the one before; and group 0 proposes its next generation as soon
        as it has decided (`ahead`), so the device is not idle while the host starts a generation. Each
        chain's draws and results are unchanged: a chain's proposal reads neither the heats nor other
        chains, and what the loop reads between generations is the decided state (`rng_out`)."""
        n = len(self.chains)
        k = self.groups if n >= self.groups else 1
        if k > 1 and self.pars_threads < self.threads:     # only the proposals use numba's threads here:
            numba.set_num_threads(self.pars_threads)       # hold them once a generation (~14 us a call)
            self.held = True
            try:
                self._groups(heats, tunefreq, autotune, n, k, power)
            finally:
                self.held = False
                numba.set_num_threads(self.threads)
        else:
            self._groups(heats, tunefreq, autotune, n, k, power)
        self.publish()

    def _groups(self, heats: np.ndarray, tunefreq: int, autotune: bool, n: int, k: int, power: float) -> None:
        """step's generation in k groups of chains (see step)."""
        bounds = [n * g // k for g in range(k + 1)]
        tickets = []
        for g in range(k):
            if g == 0 and self.ahead is not None:
                tickets.append(self._ahead_or_again(bounds[1]))
            else:
                tickets.append(self._start(bounds[g], bounds[g + 1], g))
        for g in range(k):
            c0, c1 = bounds[g], bounds[g + 1]
            for d, ticket in zip(self.divisions, tickets[g]):
                d.collect(ticket)
            self.finish(heats, tunefreq, autotune, c0, c1, power)
            if g == 0 and k > 1:
                self.ahead = self._start(c0, c1, 0)

    def _ahead_or_again(self, c1: int) -> list:
        """Group 0's tickets launched ahead; proposed again (streams rewound to their last decision) when a
        swap has since changed the tuning of one of its chains (exchange)."""
        tickets, self.ahead = self.ahead, None
        if not self.ahead_stale:
            return tickets
        self._undo_ahead(tickets, c1)
        return self._start(0, c1, 0)

    def drop_ahead(self) -> None:
        """Group 0's next generation, proposed and launched ahead by `step`, undone (before a compiled block,
        which proposes it again)."""
        if self.ahead is not None:
            tickets, self.ahead = self.ahead, None
            self._undo_ahead(tickets, len(self.chains) // self.groups)

    def _undo_ahead(self, tickets: list, c1: int) -> None:
        """A proposal of chains 0..c1-1 made ahead, undone: its flushes waited for, its streams back at their
        last decision."""
        self.ahead_stale = False
        for d, ticket in zip(self.divisions, tickets):
            d.collect(ticket)
        self.rng[:c1] = self.rng_out[:c1]

    def heat_stats(self) -> tuple:
        """The rows that go with a chain's heat (chain_generation.exchange_stats): move counters, last
        rates, tuning, tree-move batches, best lnL."""
        mv = self.moves
        return mv.counts, mv.last_rate, mv.tuning, mv.tree_batches, self.best

    def exchange(self, a: int, b: int) -> None:
        """Chains a and b swapped heats: they trade the heat's statistics; a proposal made ahead for either
        is made again (it used the old tuning)."""
        exchange_stats(a, b, *self.heat_stats())
        if self.ahead is not None:
            self.ahead_stale = True

    def take_stats(self, c: int, moves, best: float) -> None:
        """Chain c took a heat held elsewhere (another process): its statistics from those move objects."""
        self.moves.load(c, moves)
        self.best[c] = best
        if self.ahead is not None:
            self.ahead_stale = True

    def finish(self, heats: np.ndarray, tunefreq: int, autotune: bool, c0: int, c1: int, power: float = 1.0) -> None:
        """Chains c0..c1-1, their likelihoods computed: decide, keep what was accepted, note their streams."""
        self._decide(heats, tunefreq, autotune, c0, c1, power)
        for d in self.divisions:
            d.keep(self.accepted, c0, c1)
        if self.clock is not None:
            keep_clock(self.accepted, c0, c1, self.ck)
            self.grow_clock_events()
        self.rng_out[c0:c1] = self.rng[c0:c1]

    def grow_clock_events(self) -> None:
        """Wider CPP event rows when a branch fills half of them (ClockRows.grow_events); `ck` follows."""
        if self.clock.grow_events():
            self.ck = self.clock.args

    def publish(self) -> None:
        """Every chain object's scores from the arrays; its tree, values and stream on its next read."""
        for ch, lnl, lnpr, best in zip(self.chains, self.lnl.tolist(), self.lnpr.tolist(), self.best.tolist()):
            ch.lnl, ch.lnpr, ch.best_lnl, ch.stale = lnl, lnpr, best, True

    def _start(self, c0: int, c1: int, g: int) -> list:
        """Chains c0..c1-1 propose and their likelihoods are launched (flush tag g); the tickets."""
        n_param = self._propose(c0, c1)
        if n_param:
            self._plan(n_param)
        return [d.launch(self.view(j), c0, c1, str(g)) for j, d in enumerate(self.divisions)]

    def _propose(self, c0: int, c1: int) -> int:
        """Chains c0..c1-1 propose (step.propose_all); how many proposals are parameter moves. (On numba's
        threads it was slower on the GPU machine: waking the pool for 4 chains cost more than it saved.)"""
        t, mv = self.trees, self.moves
        held = not self.held and self.pars_threads < self.threads   # ParsSPR's spans wake at most pars_threads
        if held:
            numba.set_num_threads(self.pars_threads)
        try:
            return int(propose_all(self.rng, t.parent, t.kids, t.brlen, self.theta, t.parent_p, t.kids_p, t.brlen_p,
                                   self.theta_p, mv.kind, mv.param, mv.tree, mv.rows, mv.cdf, mv.bounds, mv.scale,
                                   mv.alpha_factor, mv.tuning, self.layout.off, self.n_tips, self.lo, self.hi,
                                   self.anchor, *self.cons, self.pars, self.move_of, self.log_h, self.moved, self.todo,
                                   self.div_tree, self.by_param, c0, c1, self.ck, self.cpars, self.brl_p))
        finally:
            if held:
                numba.set_num_threads(self.threads)

    def decide_args(self, heats: np.ndarray, tunefreq: int, autotune: bool, power: float = 1.0) -> tuple:
        """step.decide_all's arguments but the chain range."""
        t, mv = self.trees, self.moves
        return (self.rng, heats, float(power), t.parent, t.kids, t.brlen, self.theta, t.parent_p, t.kids_p, t.brlen_p,
                self.theta_p, self.n_tips, self.brl_kind, self.brl_args, self.topology, self.lnl, self.lnpr,
                self.best, self.brl, self.brl_p, self.pterm, self.pterm_new, self.div_lnl, self.div_lnl_p, self.todo,
                self.move_of, self.log_h, self.moved, self.accepted, tunefreq, autotune, mv.counts, mv.last_rate,
                mv.tuning, mv.tree_batches, mv.tuned, mv.target, mv.is_alpha, mv.param, mv.rows, mv.tune_range)

    def _decide(self, heats: np.ndarray, tunefreq: int, autotune: bool, c0: int, c1: int, power: float) -> None:
        """Chains c0..c1-1 accept or reject (step.decide_all); a proposal whose log likelihood is not a
        number stops the run with its move's name."""
        bad = decide_all(*self.decide_args(heats, tunefreq, autotune, power), c0, c1)
        if bad >= 0:
            self.proposal_error(bad)

    def proposal_error(self, c: int) -> None:
        """Stop the run: chain c's proposal gave a log likelihood that is not a number."""
        ch = self.chains[c]
        name = ch.moves[int(self.move_of[c])].name
        raise ModelError("a proposal of %s gave a log likelihood that is not a number (run %d, chain %d)"
                         % (name, ch.run + 1, ch.index + 1))

    def _plan(self, n_param: int) -> None:
        """The new models and prior terms of the chains whose parameter proposal is live (propose_all has
        marked the tree proposals' pattern sets): compiled (mbgpu.core.models) where a pattern set's model
        is described there, else built on the host from the chain's values."""
        pt, off = self.priors, self.layout.off
        for c in self.by_param[:n_param].tolist():
            k = int(self.moved[c])
            if pt.ok:
                self.pterm_new[c] = param_log_prior(pt.kind[k], pt.args[k], pt.alphas[k], pt.weights[k],
                                                    self.theta_p[c, off[k]:off[k + 1]])
            else:
                self.pterm_new[c] = self.prior_fn.parameter(k, self.layout.unpack(self.theta_p[c])[k])
            for j in self.touches[k]:
                sm, d = self.set_models[j], self.divisions[j]
                if sm is None or not model_proposal(self.theta_p[c], sm.desc, sm.fixed, sm.s0, sm.pi0, d.evals,
                                                    d.evecs, d.einv, d.crates, d.cweights, d.freqs, d.pinvar,
                                                    d.mult, c, self.new_q[k]):
                    self.host_model(c, j)
                self.todo[j, c] = 2

    def host_model(self, c: int, j: int) -> None:
        """Chain c's proposed model of pattern set j built on the host (mbgpu.models)."""
        ch = self.chains[c]
        values = self.layout.unpack(self.theta_p[c])
        part = ch.parts[j]
        model = ch.models.get(_spec(part, ch.params, values))
        mult = rate_multiplier(ch.params, values, part.division, part.fixed_mult)
        self.divisions[j].set_model(c, PROP, model, mult)

    # -- the chain objects' view ------------------------------------------------------------------
    def export(self, c: int, ch) -> None:
        """Chain c's trees, values, partition lnLs, moves and random state into its chain object."""
        rows = range(c * self.n_trees, (c + 1) * self.n_trees)
        trees = [self.clock.export(c, ch._trees[0])] if self.clock is not None else \
            [T.from_arrays(self.n_tips, self.trees.parent[r], self.trees.brlen[r]) for r in rows]
        ch.set_state(trees, self.layout.unpack(self.theta[c]))
        for j, part in enumerate(ch.parts):
            part.inc.lnl = float(self.div_lnl[j, c])
        self.moves.store(c, ch.moves)
        ch.core_rng = self.rng_out[c].copy()


def _spec(part, params, values):
    return spec_with_values(part.spec, params, values, part.division)


def _stream(chain) -> np.ndarray:
    """The chain's core random state: restored from a checkpoint, or seeded from its numpy stream."""
    saved = getattr(chain, "core_rng", None)
    if saved is not None:
        return np.array(saved, dtype=np.uint64)
    row = chain.rng.integers(1, 2**63, size=4, dtype=np.uint64)
    return row
