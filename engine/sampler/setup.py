"""Build the chains of an analysis from the Settings: models, free parameters, priors, start trees,
incremental likelihoods and move lists, one chain per (run, chain) with its own random stream."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu import constraints, propset
from mbgpu.clock.model import clock_models
from mbgpu.deleted_taxa import gammadir_constant
from mbgpu.memory_check import Table, available_bytes, check_fits, likelihood_bytes
from mbgpu.model_settings import build_division_models, rate_multipliers
from mbgpu.models import build_model
from mbgpu.parameters import free_parameters
from mbgpu.priors import BrlensPrior, parameter_log_prior, topology_log_prior
from mbgpu.sampler.chain import Chain, PartSlot
from mbgpu.sampler.batch_step import PartFactory
from mbgpu.sampler.model_state import ModelCache
from mbgpu.sampler.move_table import build_moves, copy_moves
from mbgpu.clock.chain_start import clock_start_trees
from mbgpu.start_state import start_trees
from mbgpu.tree_groups import tree_groups


def chain_rng(seed: int, run: int, chain: int) -> np.random.Generator:
    """The random stream of chain (run, chain): independent of how chains are placed on ranks."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(run, chain)))


@dataclass
class Prior:
    """log prior of a chain state: brlens + topology + every free parameter."""

    brlenspr: object
    params: list
    n_chars: dict
    constraints: tuple = ()        # per tree its mbgpu.constraints.ConstraintSet or None: the topology term
                                   # counts the topologies they allow (() : none)
    taxa_left_out: int = 0         # `delete`d taxa: MrBayes' gammadir constant counts them (mbgpu.deleted_taxa)
    repeats: tuple = ()            # per tree: True where an earlier tree has its topology (one Tau term each)
    tree_brlenspr: tuple = ()      # per tree its brlens prior where they differ (() : `brlenspr` for every tree)
    clocks: tuple = ()             # per tree its ClockModel or None (() : no clock tree): a clock tree's terms
                                   # are its ClockTree.ln_prior, with no topology term (MrBayes' LogPrior)

    def brlens_prior(self, k: int = 0):
        """Tree k's `brlenspr` (its V's: `prset applyto=(k) brlenspr=...`)."""
        return self.tree_brlenspr[k] if self.tree_brlenspr else self.brlenspr

    def __call__(self, tree, values) -> float:
        return self.of_trees([tree], values)

    def of_trees(self, trees, values) -> float:
        """The log prior of a state with one tree or several (`unlink topology`)."""
        return self.total_of_trees([self.brlens(t, k) for k, t in enumerate(trees)], trees, self.parameters(values))

    def brlens(self, tree, k: int = 0) -> float:
        """The branch-length term of tree `k` (its shape-dependent parts kept while the root stays); a clock
        tree's every clock term."""
        if self.clocks and self.clocks[k] is not None:
            return tree.ln_prior()
        shapes = self.__dict__.setdefault("_brlens", {})
        shape = shapes.get(k)
        if shape is None or not shape.fits(tree):
            shape = shapes[k] = BrlensPrior(self.brlens_prior(k), tree.parent, tree.n_tips)
        return shape(tree.brlen)

    def topology(self, n_tips: int, k: int = 0) -> float:
        """Tree k's topology term, computed once per tip count (it is a constant of the analysis), with the
        analysis' other constant: MrBayes' for deleted taxa under gammadir (mbgpu.deleted_taxa)."""
        cache = self.__dict__.setdefault("_topology", {})
        if (n_tips, k) not in cache and self.clocks and self.clocks[k] is not None:
            cache[n_tips, k] = 0.0
        if (n_tips, k) not in cache:
            cs = self.constraints[k] if self.constraints else None
            term = cs.log_topology_prior() if cs is not None else topology_log_prior(n_tips)
            cache[n_tips, k] = term + gammadir_constant(self.brlens_prior(k), n_tips, self.taxa_left_out)
        return cache[n_tips, k]

    def parameter(self, k: int, value) -> float:
        return parameter_log_prior(self.params[k], self.n_chars, value)

    def parameters(self, values) -> list[float]:
        return [parameter_log_prior(p, self.n_chars, v) for p, v in zip(self.params, values)]

    def total_of_trees(self, brlens: list[float], trees, parameters: list[float]) -> float:
        """`total` over every tree's branch-length and topology terms (one tree: exactly `total`)."""
        b, topo = brlens[0], self.topology(trees[0].n_tips)
        for k, (x, t) in enumerate(zip(brlens[1:], trees[1:]), 1):
            b += x
            if not (self.repeats and self.repeats[k]):
                topo += self.topology(t.n_tips, k)
        return self.total(b, topo, parameters)

    @staticmethod
    def total(brlens: float, topology: float, parameters: list[float]) -> float:
        """The log prior from its terms, summed in one fixed order (a chain caches the terms)."""
        lnp = brlens
        lnp += topology
        return lnp + sum(parameters)


def fixed_topologies(settings, groups) -> tuple[bool, ...]:
    """Per tree of `groups` (mbgpu.tree_groups.TreeGroups): whether its Tau is fixed (topologypr=fixed)."""
    if len(groups) == 1:
        return (settings.fixed_topology() is not None,)
    return tuple(settings.fixed_topology(groups.tau_divisions(k)) is not None for k in range(len(groups)))


def _of_tree(sets, divisions=None) -> list:
    """The non-empty pattern sets of the 1-based `divisions` (None: of all), in order."""
    return [ps for d, division in enumerate(sets, 1) for ps in division
            if ps.n_patterns and (divisions is None or d in divisions)]


def tree_pattern_sets(settings, sets) -> list[list]:
    """Each tree's non-empty pattern sets (one tree, or one per group of `unlink topology`), in the order
    of its move context's ParsSPR data."""
    groups = tree_groups(settings)
    return [_of_tree(sets, g) for g in ([None] if len(groups) == 1 else groups.groups)]


def parsimony_data(sets, divisions=None) -> tuple[np.ndarray, np.ndarray]:
    """(state masks [taxa, patterns], weights) of every pattern set of `divisions` (None: all): what
    starttree=parsimony scores."""
    group = _of_tree(sets, divisions)
    return np.concatenate([ps.masks for ps in group], axis=1), np.concatenate([ps.weights for ps in group])


def _gpu_parsimony(factory):
    """ParsSPR's costs on the likelihood's GPU when the backend runs on one (asynchronous with it when its
    flushes are: mbgpu.cuda.backend.backend_factory), else None (numpy)."""
    make = getattr(factory, "make", factory)
    device = getattr(make, "device", None)
    if device is None:
        return None
    from mbgpu.cuda.parsimony import GpuParsimony

    return GpuParsimony(device, asynchronous=getattr(make, "asynchronous", False))


def _move_context(settings, sets, factory=None, gpu_parsimony: bool = True, divisions=None, tau=None):
    """The move context of a tree over the 1-based `divisions` (None: all; ParsSPR scores their data),
    whose Tau has the 0-based divisions `tau` (None: all; their topology constraints)."""
    from mbgpu.moves.base import MoveContext

    flat = _of_tree(sets, divisions)
    first = settings.divisions[divisions[0] - 1 if divisions else 0]       # its V's brlens prior
    return MoveContext(n_tips=settings.matrix.ntax, brlens_prior=first.prset["Brlenspr"],
                       pattern_masks=[(ps.masks, ps.weights) for ps in flat],
                       n_states=[ps.n_states for ps in flat], anchor=settings.outgroup,
                       parsimony=_gpu_parsimony(factory) if gpu_parsimony else None,
                       constraints=constraints.active(settings, tau))


def _check_memory(n_tips: int, n_lanes: int, inputs, factory, available) -> None:
    """Stop with mbgpu.memory_check.NotEnoughMemory, before allocating, when the CPU likelihood tables of
    these lanes would not fit (a GPU backend's tables live on the device: its own check)."""
    if not inputs or getattr(factory, "kind", "cpu") != "cpu":
        return
    tables = [Table(ps.n_patterns, ps.n_states, build_model(spec).n_categories) for _, spec, ps, _ in inputs]
    check_fits(likelihood_bytes(n_tips, n_lanes, tables), available_bytes() if available is None else available)


def build_runs(settings, sets, opts, factory, seed: int, tree_moves: bool = True,
               owned=None, *, gpu_parsimony: bool = True, available: int | None = None,
               sampler_mode: str = "batched", pars_weights=None) -> tuple[list[list[Chain]], list]:
    """Chains of every run (runs x chains) and the free parameters.

    `owned(run, chain) -> bool` (MPI): chains it rejects are not built and are None in the result;
    every built chain has the same random stream and start state as without `owned`.
    `gpu_parsimony=False`: ParsSPR's parsimony in numpy even when the likelihood runs on a GPU.
    `available`: bytes of memory the likelihood tables may take (None: what the machine has now); more
    raises mbgpu.memory_check.NotEnoughMemory before anything is allocated.
    `sampler_mode`: batch_step.PartFactory's mode ("chain": an instance per chain, which can hold that
    chain's own pattern weights: mcmc reweight).
    `pars_weights`: each tree's pattern weights starttree=parsimony scores instead of the data's (mcmc
    reweight: MrBayes' BuildParsTrees scores heat rank 1's for every chain).
    """
    models = build_division_models(settings, sets)
    params = free_parameters(settings)
    n_chars = {i: float(sum(p.weights.sum() for p in group)) for i, group in enumerate(sets, 1)}
    fixed_mult = rate_multipliers(settings)
    groups = tree_groups(settings)
    clocks = tuple(clock_models(settings))
    taus = [None] if len(groups) == 1 else [groups.tau_divisions(k) for k in range(len(groups))]
    prior = Prior(settings.divisions[0].prset["Brlenspr"], params, n_chars,
                  tuple(constraints.active(settings, t) for t in taus), settings.taxa_left_out,
                  tuple(k not in groups.firsts() for k in range(len(groups))),
                  tuple(settings.divisions[g[0] - 1].prset["Brlenspr"] for g in groups.groups),
                  clocks if any(c is not None for c in clocks) else ())
    own = [None] if len(groups) == 1 else groups.groups      # each tree's divisions
    ctxs = [_move_context(settings, sets, factory, gpu_parsimony, g, t) for g, t in zip(own, taus)]
    pars = [parsimony_data(sets, None if t is None else [d + 1 for d in t]) for t in taus] \
        if settings.mcmc.get("Starttree") == "Parsimony" else None      # each Tau's data (MrBayes: all it holds)
    if pars is not None and pars_weights is not None:
        pars = [(masks, np.asarray(w, dtype=np.float64)) for (masks, _), w in zip(pars, pars_weights, strict=True)]
    use_data = settings.mcmc.get("Data", "Yes") == "Yes"
    inputs = [(dm.index, spec, ps, ps.tip_partials()) for dm in models
              for spec, ps in zip(dm.specs, dm.pattern_sets) if ps.n_patterns] if use_data else []
    template = build_moves(params, len(settings.divisions), include_tree=tree_moves, n_chars=n_chars,
                           fixed_topology=fixed_topologies(settings, groups), trees=groups, clocks=clocks)
    shared = ModelCache()
    n_lanes = sum(1 for r in range(opts.nruns) for c in range(opts.nchains) if owned is None or owned(r, c))
    _check_memory(settings.matrix.ntax, n_lanes, inputs, factory, available)
    lanes = PartFactory(factory, settings.matrix.ntax, n_lanes, sampler_mode)
    runs = []
    for run in range(opts.nruns):
        chains = []
        for c in range(opts.nchains):
            if owned is not None and not owned(run, c):
                chains.append(None)
                continue
            rng = chain_rng(seed, run, c)
            trees = clock_start_trees(settings, clocks, rng, (run, c)) if prior.clocks else \
                start_trees(settings, groups, rng, pars, (run, c))
            parts = [PartSlot(lanes.new(k, tips, ps.weights, build_model(spec), fixed_mult[div - 1]), div, spec,
                              fixed_mult[div - 1], groups.of_division(div))
                     for k, (div, spec, ps, tips) in enumerate(inputs)]
            moves = propset.apply(copy_moves(template), settings.propset, run, c)
            chains.append(Chain(run, c, rng, trees, [p.value for p in params], parts, moves, prior, ctxs, params,
                                shared))
        runs.append(chains)
    return runs, params
