"""`sumt ntrees=N`: the per-tree files of an analysis with unlinked topologies or branch lengths.

MrBayes 3.2.7a writes one tree file per tree parameter, `NAME.tree<k>.run<r>.t` (`NAME.tree<k>.t` with
one run), and its `sumt ntrees=N` (DoSumt's loop over `numTrees`) summarizes trees 1..N in turn, each on
its own: burn-in, splits, ASDSF, consensus and the files `OUT.tree<k>.parts .tstat .vstat .trprobs
.con.tre` (`.brparams`). The screen names the per-tree stem in "Summarizing trees in files ...", the
.parts and .brparams lines, but the plain OUT in "Writing statistics to files ..." and in the .tstat
and .vstat "(saved to file ...)" lines; it numbers "Examining first file for tree k" from 0 and the rest
from 1, and prints the general explanation and the taxa once, before tree 1. A tree that has no file
stops the command after the trees before it were written. With ntrees=1 (the default) every name is
plain. The `length{k}[i]` names of .vstat and .brparams come from each file's `[Param: tree{k}]`
header, not from k (a linked topology with unlinked branch lengths writes `tree{1}` in every file).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TreeFiles:
    """Names for one tree of `sumt`: `number` is None when ntrees=1 (plain names)."""

    number: int | None
    stem: str          # the .t files' stem: NAME or NAME.tree<k>
    out: str           # the output files' stem: OUT or OUT.tree<k>
    screen_out: str    # OUT, as MrBayes names the .tstat and .vstat files on screen

    @property
    def first(self) -> bool:
        """Whether this tree's screen text carries the general explanation and the list of taxa."""
        return self.number in (None, 1)


def tree_files(stem: str, out: str, ntrees: int) -> list[TreeFiles]:
    """The trees `sumt ntrees=...` summarizes, in order."""
    if ntrees <= 1:
        return [TreeFiles(None, stem, out, out)]
    return [TreeFiles(k, "%s.tree%d" % (stem, k), "%s.tree%d" % (out, k), out) for k in range(1, ntrees + 1)]


def gap_before(tree: TreeFiles) -> list[str]:
    """The blank line that ends the previous tree's text in MrBayes (the last one's is not printed)."""
    return [""] if tree.number is not None and tree.number > 1 else []


def examining_line(tree: TreeFiles, nruns: int) -> str:
    """MrBayes prints the tree's 0-based index here (and 1-based everywhere else)."""
    what = "first file" if nruns > 1 else "file"
    if tree.number is None:
        return "   Examining %s ..." % what
    return "   Examining %s for tree %d ..." % (what, tree.number - 1)


def reading_status_line(tree: TreeFiles) -> str:
    return "   Tree reading status:" if tree.number is None else "   Tree reading status for tree %d:" % tree.number


def results_banner(tree: TreeFiles) -> list[str]:
    """The heading of one tree's tables (none with ntrees=1)."""
    if tree.number is None:
        return []
    return ["", "", "   Results for tree number %d" % tree.number, "   " + "=" * 26, ""]


def length_name(param: str) -> str:
    """`length{2}` for a file headed `[Param: tree{2}]`, `length` for `[Param: tree]` (MrBayes cuts the
    first four characters of the name)."""
    return "length" + param[4:]
