"""MrBayes' default moves for the free parameters of an analysis, with names and relative weights.

Parameter moves come from mbgpu.sampler.param_moves; tree moves (topology and branch lengths) from
mbgpu.moves. Each chain gets its own copies, so tuning and counters are per chain. Names carry the
parameter's division suffix as MrBayes writes it (`Dirichlet(Revmat{all})`, `Multiplier(Alpha{1})`).
"""
from __future__ import annotations

import copy

import numpy as np

from mbgpu.output.paramnames import part_suffix
from mbgpu.param_kinds import KIND, MULTIPLIERS, SIMPLEX
from mbgpu.sampler.param_moves import ParamMove


def parameter_moves(params, n_divisions: int, n_chars: dict | None = None) -> list[ParamMove]:
    """`n_chars` (division -> character count) weighs the rate multipliers: their moves act on the
    proportions n_i m_i / N, where their prior lives, as MrBayes' Move_RateMult_Dir/_Slider do. Without
    `n_chars` the moves serve for their names and weights only (the move list printed at mcmc start)."""
    out = []
    for i, p in enumerate(params):
        pk, scale = KIND[p.kind], None
        if pk.form == MULTIPLIERS and n_chars is not None:
            n = np.array([n_chars[d] for d in p.divisions], dtype=np.float64)
            scale = n / n.sum()
        for m in pk.moves:
            name = "%s(%s%s)" % (m.head, pk.title, part_suffix(p.divisions, n_divisions))
            out.append(ParamMove(name, i, m.kind, m.weight, m.tuning, m.tuning_name, bounds=pk.bounds, scale=scale,
                                 alpha_factor=dirichlet_alpha_factor(pk.form, m.kind, int(np.size(p.value)))))
    return out


def dirichlet_alpha_factor(form: str, kind: str, size: int) -> float:
    """What MrBayes multiplies a Dirichlet move's tuning by: the number of components of a simplex or
    of the rate multipliers (Move_Revmat_Dir: alphaPi = mvp[0] * nRates; Move_Statefreqs: mvp[0] *
    nStates; Move_RateMult_Dir likewise), 1 for a ratio (Move_Tratio_Dir: mvp[0]). Acceptance rates
    of MrBayes 3.2.7a and mbgpu agree with it (docs/moves.md)."""
    return float(size) if kind == "dirichlet" and form in (SIMPLEX, MULTIPLIERS) else 1.0


def tree_moves(n_divisions: int, fixed_topology=False, trees=None, clocks=None) -> list:
    """The unconstrained-tree moves (mbgpu.moves) with MrBayes' default weights and names; with a fixed
    topology only those of the branch lengths (MrBayes drops every move of Tau; `fixed_topology`: one
    bool, or one per tree of `trees`, `prset applyto=(k) topologypr=fixed(...)`). With several trees
    (`trees`, mbgpu.tree_groups.TreeGroups) MrBayes lists every tree's topology moves, then every tree's
    branch-length moves; each slot's `tree` says which tree it moves. `clocks`: per tree its ClockModel
    or None (mbgpu.clock.model.clock_models); clock trees get MrBayes' clock moves (clock_slots)."""
    from mbgpu.moves import default_tree_moves
    from mbgpu.sampler.tree_move_slot import TreeMoveSlot

    suffixes = [trees.suffix(k) for k in range(len(trees))] if trees is not None else \
        [part_suffix(range(1, n_divisions + 1), n_divisions)]
    fixed = tuple(fixed_topology) if isinstance(fixed_topology, (tuple, list)) else \
        (bool(fixed_topology),) * len(suffixes)
    if clocks is not None and any(c is not None for c in clocks):
        return clock_slots(clocks, n_divisions, suffixes, fixed)
    topology, brlens = [], []
    for k, sfx in enumerate(suffixes):
        shared = trees.sharing(trees.tau(k)) if trees is not None else (k,)
        if len(shared) > 1 and not fixed[k] and k == shared[0]:
            topology.append(_mult_nni(trees, shared))
        for move in default_tree_moves():
            head, _, inner = move.name.partition("(")
            names = inner.rstrip(")").split(",")
            if "Tau" in names and (fixed[k] or len(shared) > 1):
                continue
            slot = TreeMoveSlot(move, "%s(%s)" % (head, ",".join(p + sfx for p in names)), tree=k)
            (topology if "Tau" in names else brlens).append(slot)
    return topology + brlens


def clock_slots(clocks, n_divisions: int, suffixes, fixed_topology) -> list:
    """The moves of an analysis of clock trees (`clocks`: per tree its ClockModel) as chain moves, in MrBayes'
    order with its weights and tunings (mbgpu.clock.move_table), weight-0 ones included for propset to
    switch on (propset.apply drops those left at 0)."""
    from mbgpu.clock.chain_moves import chain_move
    from mbgpu.clock.move_table import clock_move_specs
    from mbgpu.sampler.tree_move_slot import TreeMoveSlot

    out = []
    for spec in clock_move_specs(clocks, n_divisions, suffixes, fixed_topology, available=True):
        move = chain_move(spec)
        if move is not None:
            out.append(TreeMoveSlot(move, spec.name, tree=spec.trees[0]))
    return out


def _mult_nni(trees, shared: tuple[int, ...]):
    """MrBayes' only topology move of trees sharing one Tau: MultNNI(Tau{all},V{1},V{2},...)."""
    from mbgpu.moves.nni import MultNNI
    from mbgpu.sampler.tree_move_slot import TreeMoveSlot

    names = ["Tau" + trees.tau_suffix(shared[0])] + ["V" + trees.suffix(k) for k in shared]
    return TreeMoveSlot(MultNNI(), "MultNNI(%s)" % ",".join(names), tree=shared[0], shared=shared)


def build_moves(params, n_divisions: int, include_tree: bool = True, n_chars: dict | None = None,
                fixed_topology=False, trees=None, clocks=None) -> list:
    """The full move list of one chain: parameter moves then tree moves (`trees`, `clocks`: see tree_moves)."""
    moves = parameter_moves(params, n_divisions, n_chars)
    if include_tree:
        moves += tree_moves(n_divisions, fixed_topology, trees, clocks)
    return moves


def copy_moves(moves: list) -> list:
    """Independent copies (tuning and counters) for another chain."""
    return copy.deepcopy(moves)
