"""A chain's start clock tree: from `startvals tau=T v=T` (mbgpu.clock.start_tree.clock_start, MrBayes'
checks) or MrBayes' random clock tree (mbgpu.clock.random_start), with the tree-prior parameters at
MrBayes' start values or its draws, from the chain's own stream.
"""
from __future__ import annotations

import numpy as np

from mbgpu.clock.chain_tree import ClockTree, frame_of, start_params
from mbgpu.clock.random_start import draw_start_values, random_clock_start
from mbgpu.clock.start_tree import clock_start
from mbgpu.errors import NotImplementedYet


def _startvals_name(settings, chain: tuple[int, int]) -> str | None:
    """The trees-block tree startvals gives this chain (V's, which carries the lengths), or None."""
    tau, v = settings.startval("Tau"), settings.startval("V")
    grid = settings.startvals_grid
    if grid is not None and not (chain[0] < grid[0] and chain[1] < grid[1]):
        return None
    if settings.mcmc.get("Starttree", "Current") in ("Random", "Parsimony"):
        return None
    if tau is not None and v is not None and tau != v:
        raise NotImplementedYet("startvals tau and v naming different trees for a clock tree are not supported yet")
    return v or tau


def clock_start_trees(settings, clocks, rng: np.random.Generator, chain: tuple[int, int] = (0, 0)) -> list:
    """The chain's start trees: one ClockTree (an analysis with one clock tree).

    Raises:
        NotImplementedYet: several trees, only a Tau start value, mcmc nperts.
        ModelError: a start tree or calibrations MrBayes refuses.
    """
    if len(clocks) != 1 or clocks[0] is None:
        raise NotImplementedYet("clock trees with unlinked topologies or branch lengths are not supported yet")
    model = clocks[0]
    if int(settings.mcmc.get("Nperts", 0)):
        raise NotImplementedYet("mcmc nperts with a clock tree is not supported yet")
    name = _startvals_name(settings, chain)
    if name is not None and settings.startval("V") is None:
        raise NotImplementedYet("startvals tau without v for a clock tree is not supported yet")
    state = clock_start(settings, model, name) if name is not None else random_clock_start(settings, model, rng)
    return [ClockTree(frame_of(model, state), state, start_params(model, draw_start_values(model, rng)))]
