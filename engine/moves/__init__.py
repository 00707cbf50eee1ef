"""MrBayes' tree moves for unrooted, non-clock trees (topology and branch lengths).

Each move is an object with `name`, `weight`, `tuning`, `target` and
`propose(tree, rng, ctx) -> Proposal`; see base.py and docs/moves.md.
"""
from mbgpu.moves.base import (BRLENS_MAX, BRLENS_MIN, Move, MoveContext, Proposal, autotune_multiplier,
                               brlen_bounds)
from mbgpu.moves.branch import Multiplier, NodeSlider, TreeLengthMultiplier
from mbgpu.moves.graph import check_tree, dirty_nodes
from mbgpu.moves.nni import NNI
from mbgpu.moves.pars_spr import ParsSPR
from mbgpu.moves.spr import ExtSPR
from mbgpu.moves.tbr import ExtTBR


def default_tree_moves() -> list[Move]:
    """Fresh instances of MrBayes' default tree moves for an unconstrained tree, in showmoves order."""
    return [ExtSPR(), ExtTBR(), NNI(), ParsSPR(), Multiplier(), NodeSlider(), TreeLengthMultiplier()]


__all__ = ["BRLENS_MAX", "BRLENS_MIN", "ExtSPR", "ExtTBR", "Move", "MoveContext", "Multiplier", "NNI",
           "NodeSlider", "ParsSPR", "Proposal", "TreeLengthMultiplier", "autotune_multiplier",
           "brlen_bounds", "check_tree", "default_tree_moves", "dirty_nodes"]
