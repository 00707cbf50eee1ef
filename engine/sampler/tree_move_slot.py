"""Adapter giving mbgpu.moves tree moves the counters and tuning view the chain and files use."""
from __future__ import annotations


class TreeMoveSlot:
    """Wraps one tree move: `name`, `weight`, `counts`, `autotune`, `tuning` (its tuned value: lambda, or a clock move's `tuned`), and
    `tree`, the 0-based tree of the chain it moves (several with `unlink topology`); `shared`: the trees
    of a topology that MultNNI moves together (`unlink brlens` inside a linked topology), else None."""

    def __init__(self, move, name: str, tree: int = 0, shared: tuple[int, ...] | None = None):
        self.move, self.name, self.weight, self.tree = move, name, float(move.weight), tree
        self.shared = shared
        self.counts = {"tried": 0, "accepted": 0, "batch_tried": 0, "batch_accepted": 0, "batches": 0}
        self.autotune = move.target is not None
        self.target = move.target
        self.tuning_name = getattr(move, "tuned", "lambda") if self.autotune else None

    @property
    def tuning(self) -> float | None:
        return self.move.tuning.get(self.tuning_name) if self.autotune else None

    def propose(self, tree, rng, ctx):
        """The move's proposal, or None (a rejection) when it aborted or breaks a topology constraint."""
        prop = self.move.propose(tree, rng, ctx)
        cons = None if getattr(self.move, "keeps_constraints", False) else getattr(ctx, "constraints", None)
        if prop.aborted or (cons is not None and cons.violated(prop.tree) is not None):
            return None
        return prop


def propose_shared(slot: TreeMoveSlot, trees: list, rng, ctx) -> list | None:
    """MultNNI's moved trees (every tree of slot.shared, in that order), or None (a rejection) when it
    aborted or breaks a topology constraint."""
    moved = slot.move.propose_shared(trees, rng)
    cons = getattr(ctx, "constraints", None)
    if moved is None or (cons is not None and cons.violated(moved[0]) is not None):
        return None
    return moved


def tune_tree_move(slot: TreeMoveSlot, rate: float) -> None:
    slot.move.tune(rate)
