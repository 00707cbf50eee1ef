"""Where each free parameter lives in a chain's parameter vector, and which moves act on what.

`ParamLayout` packs a chain's values (one array per mbgpu.parameters.FreeParameter) into one float64
vector and back. `MoveTable` turns a chain's move objects (mbgpu.sampler.param_moves.ParamMove and the
tree moves of mbgpu.moves in their TreeMoveSlot) into the integer and float tables the compiled step
reads, and writes tuning and counters back into those objects.
"""
from __future__ import annotations

import math

import numpy as np

# move kinds of the compiled step (mbgpu.core.step dispatches on them)
DIRICHLET, SLIDER, MULTIPLIER, PINVAR_SLIDER = 0, 1, 2, 3
MULT_NNI, EXT_SPR, EXT_TBR, NNI, PARS_SPR, BRANCH_MULTIPLIER, NODE_SLIDER, TREE_LENGTH = 9, 10, 11, 12, 13, 14, 15, 16
FIRST_TOPOLOGY, LAST_TOPOLOGY = MULT_NNI, PARS_SPR      # the kinds that change the topology

_PARAM_KINDS = {"dirichlet": DIRICHLET, "slider": SLIDER, "multiplier": MULTIPLIER, "pinvar_slider": PINVAR_SLIDER}
# tree move class -> (kind, tuning keys in the order the compiled move reads them)
_TREE_KINDS = {"ExtSPR": (EXT_SPR, ("p_ext", "lambda")), "ExtTBR": (EXT_TBR, ("p_ext", "lambda")),
               "NNI": (NNI, ()), "MultNNI": (MULT_NNI, ()), "ParsSPR": (PARS_SPR, ("warp", "r", "v_t", "lambda")),
               "Multiplier": (BRANCH_MULTIPLIER, ("lambda",)), "NodeSlider": (NODE_SLIDER, ("lambda",)),
               "TreeLengthMultiplier": (TREE_LENGTH, ("lambda",))}
COUNTS = ("tried", "accepted", "batch_tried", "batch_accepted", "batches")
N_TUNING = 4


class ParamLayout:
    """Offsets of every free parameter in the parameter vector (`off[k]:off[k + 1]`)."""

    def __init__(self, params):
        self.shapes = [np.shape(p.value) for p in params]
        sizes = [int(np.size(p.value)) for p in params]
        self.off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def size(self) -> int:
        return int(self.off[-1])

    def pack(self, values) -> np.ndarray:
        out = np.zeros(self.size)
        for k, v in enumerate(values):
            out[self.off[k]:self.off[k + 1]] = np.ravel(v)
        return out

    def unpack(self, vector: np.ndarray) -> list:
        return [np.array(vector[self.off[k]:self.off[k + 1]], dtype=np.float64).reshape(s)
                for k, s in enumerate(self.shapes)]


def unsupported_move(move) -> str | None:
    """Why the compiled step cannot run `move` (None: it can)."""
    inner = getattr(move, "move", None)
    if inner is None:
        return None if getattr(move, "kind", None) in _PARAM_KINDS else "move %s" % move.name
    return None if type(inner).__name__ in _TREE_KINDS else "move %s" % move.name


class MoveTable:
    """The moves of every chain as arrays (every chain has the same move list)."""

    def __init__(self, chains, layout: ParamLayout):
        moves = chains[0].moves
        m, c = len(moves), len(chains)
        self.kind = np.zeros(m, dtype=np.int64)
        self.param = np.full(m, -1, dtype=np.int64)
        self.tree = np.zeros(m, dtype=np.int64)            # the tree of the chain a tree move acts on (MultNNI: the
        self.rows = np.zeros((m, len(chains[0].trees)), dtype=np.bool_)   # first of `rows`, the trees it changes)
        self.bounds = np.zeros((m, 2))
        self.target = np.zeros(m)
        self.tuned = np.full(m, -1, dtype=np.int64)        # index of the autotuned tuning value, -1: none
        self.is_alpha = np.zeros(m, dtype=np.bool_)
        width = max([1] + [int(layout.off[k + 1] - layout.off[k]) for k in range(len(layout.shapes))])
        self.scale = np.ones((m, width))
        self.alpha_factor = np.ones(m)                       # Dirichlet: tuning x this (ParamMove.alpha_factor)
        weights = np.array([mv.weight for mv in moves], dtype=np.float64)
        self.cdf = (weights / weights.sum()).cumsum()
        self.cdf /= self.cdf[-1]
        for i, mv in enumerate(moves):
            self._describe(i, mv)
        self.tuning = np.zeros((c, m, N_TUNING))
        self.counts = np.zeros((c, m, len(COUNTS)), dtype=np.int64)
        self.last_rate = np.full((c, m), np.nan)
        self.tree_batches = np.zeros((c, m), dtype=np.int64)
        for j, ch in enumerate(chains):
            self.load(j, ch.moves)

    def _describe(self, i: int, mv) -> None:
        inner = getattr(mv, "move", None)
        if inner is None:
            self.kind[i] = _PARAM_KINDS[mv.kind]
            self.param[i] = mv.param
            self.bounds[i] = mv.bounds
            self.target[i] = mv.target
            self.tuned[i] = 0 if mv.autotune and mv.target is not None else -1
            self.is_alpha[i] = mv.tuning_name == "alpha"
            if mv.scale is not None:
                self.scale[i, :len(mv.scale)] = mv.scale
            self.alpha_factor[i] = mv.alpha_factor
            return
        self.kind[i] = _TREE_KINDS[type(inner).__name__][0]
        self.tree[i] = mv.tree
        self.rows[i, list(mv.shared or (mv.tree,))] = True
        if inner.target is not None:
            self.target[i] = inner.target
            self.tuned[i] = self._keys(inner).index("lambda")

    @staticmethod
    def _keys(inner) -> tuple:
        return _TREE_KINDS[type(inner).__name__][1]

    def load(self, j: int, moves) -> None:
        """Chain j's tuning and counters from its move objects."""
        for i, mv in enumerate(moves):
            inner = getattr(mv, "move", None)
            if inner is None:
                self.tuning[j, i, 0] = mv.tuning
            else:
                for t, key in enumerate(self._keys(inner)):
                    self.tuning[j, i, t] = inner.tuning[key]
                self.tree_batches[j, i] = inner.batches
            self.counts[j, i] = [mv.counts[k] for k in COUNTS]
            self.last_rate[j, i] = mv.counts.get("last_rate", math.nan)

    def store(self, j: int, moves) -> None:
        """Chain j's tuning and counters into its move objects."""
        for i, mv in enumerate(moves):
            inner = getattr(mv, "move", None)
            if inner is None:
                mv.tuning = float(self.tuning[j, i, 0])
            else:
                for t, key in enumerate(self._keys(inner)):
                    inner.tuning[key] = float(self.tuning[j, i, t])
                inner.batches = int(self.tree_batches[j, i])
            mv.counts = dict(zip(COUNTS, (int(x) for x in self.counts[j, i])))
            if not math.isnan(self.last_rate[j, i]):
                mv.counts["last_rate"] = float(self.last_rate[j, i])
