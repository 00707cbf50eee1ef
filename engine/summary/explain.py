"""The "General explanation" that MrBayes 3.2.7a's `sumt` prints before its list of taxa, every time.

MrBayes pads the lines to fixed widths and prints some of its blank lines without the in-block spacer
(83 spaces) and others with it (81 spaces after the spacer); mbgpu's screen has no spacer, so the text is
what MrBayes prints with an empty spacer, trailing spaces included.
"""
from __future__ import annotations

_BLANK = " " * 83          # printed without the spacer
_WIDE = 81                 # width of the lines printed after the spacer

_TEXT = (
    None, "   General explanation:", None,
    "   In an unrooted tree, a taxon bipartition (split) is specified by removing a",
    "   branch, thereby dividing the species into those to the left and those to the",
    "   right of the branch. Here, taxa to one side of the removed branch are denoted",
    "   '.' and those to the other side are denoted '*'. Specifically, the '.' symbol",
    "   is used for the taxa on the same side as the outgroup.", None,
    "   In a rooted or clock tree, the tree is rooted using the model and not by",
    "   reference to an outgroup. Each bipartition therefore corresponds to a clade,",
    "   that is, a group that includes all the descendants of a particular branch in",
    "   the tree.  Taxa that are included in each clade are denoted using '*', and",
    "   taxa that are not included are denoted using the '.' symbol.", None,
    "   The output first includes a key to all the bipartitions with frequency larger",
    "   or equual to (Minpartfreq) in at least one run. Minpartfreq is a parameter to",
    ("   sumt command and currently it is set to %s.  This is followed by a table  ", 0),
    "   with statistics for the informative bipartitions (those including at least",
    "   two taxa), sorted from highest to lowest probability. For each bipartition,",
    "   the table gives the number of times the partition or split was observed in all",
    "   runs (#obs) and the posterior probability of the bipartition (Probab.), which",
    "   is the same as the split frequency. If several runs are summarized, this is",
    "   followed by the minimum split frequency (Min(s)), the maximum frequency",
    "   (Max(s)), and the standard deviation of frequencies (Stddev(s)) across runs.",
    "   The latter value should approach 0 for all bipartitions as MCMC runs converge.", None,
    "   This is followed by a table summarizing branch lengths, node heights (if a",
    "   clock model was used) and relaxed clock parameters (if a relaxed clock model",
    ("   was used). The mean, variance, and 95 % credible interval are given for each ", 0),
    "   of these parameters. If several runs are summarized, the potential scale",
    "   reduction factor (PSRF) is also given; it should approach 1 as runs converge.",
    "   Node heights will take calibration points into account, if such points were",
    "   used in the analysis.", "",
    "   Note that Stddev may be unreliable if the partition is not present in all",
    "   runs (the last column indicates the number of runs that sampled the partition",
    "   if more than one run is summarized). The PSRF is not calculated at all if",
    "   the partition is not present in all runs.The PSRF is also sensitive to small",
    "   sample sizes and it should only be considered a rough guide to convergence",
    "   since some of the assumptions allowing one to interpret it as a true potential",
    "   scale reduction factor are violated in MrBayes.", "",
    "   List of taxa in bipartitions:", None,
)


def general_explanation(minpartfreq: float) -> list[str]:
    """MrBayes' explanation of the sumt tables, ending with the 'List of taxa in bipartitions:' header."""
    out = []
    for item in _TEXT:
        if item is None:
            out.append(_BLANK)
        elif isinstance(item, tuple):
            out.append(item[0] % ("%1.2f" % minpartfreq) if "%s" in item[0] else item[0])
        else:
            out.append(item.ljust(_WIDE))
    return out
