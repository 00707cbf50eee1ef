"""MrBayes' default moves for the free parameters of an analysis, with names and relative weights.

Parameter moves come from mbgpu.sampler.param_moves; tree moves (topology and branch lengths) from
mbgpu.moves. Each chain gets its own copies, so tuning and counters are per chain. Names carry the
parameter's division suffix as MrBayes writes it (`Dirichlet(Revmat{all})`, `Multiplier(Alpha{1})`).
"""
from __future__ import annotations

import copy
import math

import numpy as np

from mbgpu.output.paramnames import part_suffix
from mbgpu.sampler.param_moves import ParamMove

# kind -> [(MrBayes name, move kind, weight, tuning, tuning name)]
_PARAM_MOVES = {
    "revmat": [("Dirichlet(Revmat%s)", "dirichlet", 0.5, 100.0, "alpha"),
               ("Slider(Revmat%s)", "slider", 0.5, 0.15, "delta")],
    "statefreq": [("Dirichlet(Pi%s)", "dirichlet", 0.5, 100.0, "alpha"),
                  ("Slider(Pi%s)", "slider", 0.5, 0.20, "delta")],
    "shape": [("Multiplier(Alpha%s)", "multiplier", 1.0, 2.0 * math.log(1.5), "lambda")],
    "pinvar": [("Slider(Pinvar%s)", "pinvar_slider", 1.0, 0.1, "delta")],
    "tratio": [("Dirichlet(Tratio%s)", "dirichlet", 1.0, 50.0, "alpha")],
    "ratemult": [("Dirichlet(Ratemultiplier%s)", "dirichlet", 0.75, 50.0, "alpha"),
                 ("Slider(Ratemultiplier%s)", "slider", 0.75, 0.05, "delta")],
}


def parameter_moves(params, n_divisions: int, n_chars: dict | None = None) -> list[ParamMove]:
    """`n_chars` (division -> character count) weighs the rate multipliers: their moves act on the
    proportions n_i m_i / N, where their prior lives, as MrBayes' Move_RateMult_Dir/_Slider do. Without
    `n_chars` the moves serve for their names and weights only (the move list printed at mcmc start)."""
    out = []
    for i, p in enumerate(params):
        scale = None
        if p.kind == "ratemult" and n_chars is not None:
            n = np.array([n_chars[d] for d in p.divisions], dtype=np.float64)
            scale = n / n.sum()
        for name, kind, weight, tuning, tname in _PARAM_MOVES[p.kind]:
            sfx = part_suffix(p.divisions, n_divisions)
            bounds = (1e-5, 200.0) if p.kind == "shape" else (1e-5, 100.0)
            out.append(ParamMove(name % sfx, i, kind, weight, tuning, tname, bounds=bounds, scale=scale))
    return out


def tree_moves(n_divisions: int) -> list:
    """The unconstrained-tree moves (mbgpu.moves) with MrBayes' default weights and names."""
    from mbgpu.moves import default_tree_moves
    from mbgpu.sampler.tree_move_slot import TreeMoveSlot

    sfx = part_suffix(range(1, n_divisions + 1), n_divisions)
    out = []
    for move in default_tree_moves():
        head, _, inner = move.name.partition("(")
        params = ",".join(p + sfx for p in inner.rstrip(")").split(","))
        out.append(TreeMoveSlot(move, "%s(%s)" % (head, params)))
    return out


def build_moves(params, n_divisions: int, include_tree: bool = True, n_chars: dict | None = None) -> list:
    """The full move list of one chain: parameter moves then tree moves."""
    moves = parameter_moves(params, n_divisions, n_chars)
    if include_tree:
        moves += tree_moves(n_divisions)
    return moves


def copy_moves(moves: list) -> list:
    """Independent copies (tuning and counters) for another chain."""
    return copy.deepcopy(moves)
