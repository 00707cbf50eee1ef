"""Where each free parameter lives in a chain's parameter vector, and which moves act on what.

`ParamLayout` packs a chain's values (one array per mbgpu.parameters.FreeParameter) into one float64
vector and back. `MoveTable` turns a chain's move objects (mbgpu.sampler.param_moves.ParamMove and the
tree moves of mbgpu.moves in their TreeMoveSlot) into the integer and float tables the compiled step
reads, and writes tuning and counters back into those objects.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.moves.base import LAMBDA_MAX, LAMBDA_MIN

# move kinds of the compiled step (mbgpu.core.step dispatches on them)
DIRICHLET, SLIDER, MULTIPLIER, PINVAR_SLIDER = 0, 1, 2, 3
MULT_NNI, EXT_SPR, EXT_TBR, NNI, PARS_SPR, BRANCH_MULTIPLIER, NODE_SLIDER, TREE_LENGTH = 9, 10, 11, 12, 13, 14, 15, 16
FIRST_TOPOLOGY, LAST_TOPOLOGY = MULT_NNI, PARS_SPR      # the kinds that change the topology
# clock moves (mbgpu.core.clock_moves): depth and topology moves of the rooted tree, the clock rate, FBD's
# fossil moves, relaxed-clock rates and CPP events, then the tree-prior parameters (no effective length changes:
# FIRST_CLOCK_PARAM on)
(CLOCK_NODESLIDER, CLOCK_STRETCH, CLOCK_EXTSPR, CLOCK_NNI, CLOCK_PARSSPR, CLOCK_FOSSILSPR, CLOCK_RATE, CLOCK_ADDBRANCH,
 CLOCK_DELBRANCH, CLOCK_IGRRATE, CLOCK_TK02RATE, CLOCK_CPP_ADD_DELETE, CLOCK_CPP_POSITION, CLOCK_CPP_MULTIPLIER,
 CLOCK_SPECIATION, CLOCK_EXTINCTION, CLOCK_FOSSILIZATION, CLOCK_POPSIZE, CLOCK_IGRVAR, CLOCK_TK02VAR,
 CLOCK_CPPRATE) = range(17, 38)
FIRST_CLOCK, FIRST_CLOCK_PARAM, LAST_CLOCK = CLOCK_NODESLIDER, CLOCK_SPECIATION, CLOCK_CPPRATE

_PARAM_KINDS = {"dirichlet": DIRICHLET, "slider": SLIDER, "multiplier": MULTIPLIER, "pinvar_slider": PINVAR_SLIDER}
# tree move class -> (kind, tuning keys in the order the compiled move reads them)
_TREE_KINDS = {"ExtSPR": (EXT_SPR, ("p_ext", "lambda")), "ExtTBR": (EXT_TBR, ("p_ext", "lambda")),
               "NNI": (NNI, ()), "MultNNI": (MULT_NNI, ()), "ParsSPR": (PARS_SPR, ("warp", "r", "v_t", "lambda")),
               "Multiplier": (BRANCH_MULTIPLIER, ("lambda",)), "NodeSlider": (NODE_SLIDER, ("lambda",)),
               "TreeLengthMultiplier": (TREE_LENGTH, ("lambda",))}
# clock move class (mbgpu.clock.chain_*moves) -> kind; tuning keys: the move's own, in its order
_CLOCK_KINDS = {"NodesliderClock": CLOCK_NODESLIDER, "TreeStretch": CLOCK_STRETCH, "ExtSprClock": CLOCK_EXTSPR,
                "NNIClock": CLOCK_NNI, "ParsSPRClock": CLOCK_PARSSPR, "ExtFossilSprClock": CLOCK_FOSSILSPR,
                "ClockRateMultiplier": CLOCK_RATE, "AddBranch": CLOCK_ADDBRANCH, "DelBranch": CLOCK_DELBRANCH,
                "IgrBrlensMultiplier": CLOCK_IGRRATE, "TK02BrlensMultiplier": CLOCK_TK02RATE,
                "SpeciationMultiplier": CLOCK_SPECIATION, "ExtinctionSlider": CLOCK_EXTINCTION,
                "FossilizationSlider": CLOCK_FOSSILIZATION, "PopsizeMultiplier": CLOCK_POPSIZE,
                "IgrvarMultiplier": CLOCK_IGRVAR, "TK02varMultiplier": CLOCK_TK02VAR,
                "CppEventsAddDelete": CLOCK_CPP_ADD_DELETE, "CppEventPosition": CLOCK_CPP_POSITION,
                "CppEventMultiplier": CLOCK_CPP_MULTIPLIER, "CppRateMultiplier": CLOCK_CPPRATE}
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
    known = type(inner).__name__ in _TREE_KINDS or type(inner).__name__ in _CLOCK_KINDS
    return None if known else "move %s" % move.name


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
        self.tune_range = np.tile([LAMBDA_MIN, LAMBDA_MAX], (m, 1))   # a tree move's autotuned value stays inside
        self.is_alpha = np.zeros(m, dtype=np.bool_)
        width = max([1] + [int(layout.off[k + 1] - layout.off[k]) for k in range(len(layout.shapes))])
        self.scale = np.ones((m, width))
        self.alpha_factor = np.ones(m)                       # Dirichlet: tuning x this (ParamMove.alpha_factor)
        weights = np.array([mv.weight for mv in moves], dtype=np.float64)
        self.cdf = (weights / weights.sum()).cumsum()
        self.cdf /= self.cdf[-1]
        for i, mv in enumerate(moves):
            self._describe(i, mv, chains[0])
        self.tuning = np.zeros((c, m, N_TUNING))
        self.counts = np.zeros((c, m, len(COUNTS)), dtype=np.int64)
        self.last_rate = np.full((c, m), np.nan)
        self.tree_batches = np.zeros((c, m), dtype=np.int64)
        for j, ch in enumerate(chains):
            self.load(j, ch.moves)

    def _describe(self, i: int, mv, chain) -> None:
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
        name = type(inner).__name__
        self.kind[i] = _CLOCK_KINDS[name] if name in _CLOCK_KINDS else _TREE_KINDS[name][0]
        self.tree[i] = mv.tree
        self.rows[i, list(mv.shared or (mv.tree,))] = True
        tuned = getattr(inner, "tuned", "lambda")          # a clock move names its tuned value (None: none)
        if inner.target is not None and tuned is not None:
            self.target[i] = inner.target
            self.tuned[i] = self._keys(inner).index(tuned)
            self.tune_range[i] = getattr(inner, "ranges", {}).get(tuned, (LAMBDA_MIN, LAMBDA_MAX))
        if hasattr(inner, "bounds"):                        # a clock parameter's reflection bounds
            self.bounds[i] = inner.bounds(chain.trees[mv.tree].frame.model)

    @staticmethod
    def _keys(inner) -> tuple:
        name = type(inner).__name__
        return tuple(inner.tuning) if name in _CLOCK_KINDS else _TREE_KINDS[name][1]

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
