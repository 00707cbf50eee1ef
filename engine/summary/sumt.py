"""`sumt`: split and tree summaries of .t files written as MrBayes 3.2.7a writes them.

Files: `.parts` (key to splits), `.tstat` (split frequencies and their spread over runs), `.vstat`
(branch-length summaries with PSRF), `.con.tre` (majority-rule / all-compatible consensus with
FigTree annotations), `.trprobs` (trees by posterior probability, drawn on screen with
`Showtreeprobs`: trprobs.py) and `.brparams` (`Savebrparams`: brparams.py); on screen also MrBayes'
general explanation (explain.py) and its drawings of the consensus (condraw.py). Splits are kept in MrBayes'
order: a binary search tree of bitsets filled in tree-reading order, listed in preorder, filtered by
`Minpartfreq`, then MrBayes' (unstable) quicksort by count, root and tips first.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.diagnostics import mean_variance, psrf
from mbgpu.errors import InputFileError, Location, NotImplementedYet
from mbgpu.output.tfile import read_tfile
from mbgpu.output.write_failure import write_text_whole
from mbgpu.summary.brparams import brparams_text
from mbgpu.summary.condraw import DrawNode, credibility_tree, phylogram
from mbgpu.summary.clockdepth import node_ages, node_depths
from mbgpu.summary.common import (burnin_of, c_fixed, check_exists, emit, file_stem, mb_num, mb_quicksort,
                                   number_format, output_stem, run_files, session_stamp)
from mbgpu.summary.explain import general_explanation
from mbgpu.summary.prune import deleted_names, pruned_files, pruned_lines
from mbgpu.summary.outgroup import hung_edges, outgroup_index, remember_outgroup, stale_outgroup
from mbgpu.summary.sump import hpd_median
from mbgpu.summary.sumt_clock import (branch_rates, clock_lengths, has_ages, height_annotations, node_age,
                                      rate_annotations, vstat_rows)
from mbgpu.summary.sumt_trees import (TreeFiles, examining_line, gap_before, length_name, reading_status_line,
                                      results_banner, tree_files)
from mbgpu.summary.treeorder import TreeCounter, order_array
from mbgpu.summary.trprobs import tree_probabilities

_ZERO_BY_ZERO = math.copysign(math.nan, -1.0)      # what 0.0/0.0 gives in C on x86: printed as -nan


class _Part:
    __slots__ = ("bits", "count", "total", "lengths", "heights", "ages", "rates", "left", "right")

    def __init__(self, bits: int, nruns: int):
        self.bits, self.count, self.total = bits, [0] * nruns, 0
        self.lengths: list[list[float]] = [[] for _ in range(nruns)]
        self.heights: list[list[float]] = [[] for _ in range(nruns)]     # clock trees: node heights
        self.ages: list[list[float]] = [[] for _ in range(nruns)]        # ... and ages (free clock rate)
        self.rates: dict = {}      # relaxed clocks: set name -> (effective lengths, rates), each by run
        self.left = self.right = None


def _add(root, bits: int, run: int, length: float, nruns: int, height=None, age=None, rates=()):
    """AddSumtPartition: BST keyed by the bitset (smaller existing key -> go left)."""
    if root is None:
        root = _Part(bits, nruns)
        node = root
    else:
        node = root
        while node.bits != bits:
            side = "left" if node.bits < bits else "right"
            nxt = getattr(node, side)
            if nxt is None:
                nxt = _Part(bits, nruns)
                setattr(node, side, nxt)
            node = nxt
    node.count[run] += 1
    node.total += 1
    node.lengths[run].append(length)
    if height is not None:
        node.heights[run].append(height)
    if age is not None:
        node.ages[run].append(age)
    for name, blen, rate in rates:
        got = node.rates.setdefault(name, ([[] for _ in range(nruns)], [[] for _ in range(nruns)]))
        got[0][run].append(blen)
        got[1][run].append(rate)
    return root


def _preorder(root) -> list:
    out, stack = [], [root]
    while stack:
        r = stack.pop()
        if r is not None:
            out.append(r)
            stack.append(r.right)
            stack.append(r.left)
    return out


def _sort_terminals(items: list, n_taxa: int) -> None:
    """SortTerminalPartCtr: root first, then the tips in taxon order (among the top-count splits)."""
    top = items[0].total
    i = 0
    while items[i].total == top:
        if bin(items[i].bits).count("1") == n_taxa:
            break
        i += 1
    if i != 0:
        items[0], items[i] = items[i], items[0]
    for i in range(1, n_taxa + 1):
        j = i
        while j < len(items) and items[j].total == top:
            b = items[j].bits
            if bin(b).count("1") == 1 and b == 1 << (i - 1):
                break
            j += 1
        if j != i and j < len(items):
            items[i], items[j] = items[j], items[i]


def _summary(runs: list[list[float]], hpd: bool) -> dict:
    """GetSummary over the runs' samples of one split's branch length."""
    allv = np.array([v for r in runs for v in r], dtype=np.float64)
    mean, var = mean_variance(allv)
    lo, hi, med = hpd_median(allv, hpd)
    ps = psrf(runs) if len(runs) > 1 else float("nan")
    return dict(mean=mean, var=var, lower=lo, upper=hi, median=med, psrf=ps)


def _tree_parts(tree, parts_root, run, nruns, edges):
    """Add every node's split (tips, internal nodes and the root) in postorder of the written tree; a
    clock tree's nodes with their heights (and ages where the tree has a clock rate), its root with
    length 0 as MrBayes' PolyTree root has."""
    if not tree.rooted:
        for bits, length in edges:
            parts_root = _add(parts_root, bits, run, length, nruns)
        return parts_root
    heights = node_depths(tree.topology, edges)
    ages = node_ages(heights, tree.clockrate) if tree.clockrate is not None else [None] * len(edges)
    last = len(edges) - 1
    for k, (bits, length) in enumerate(edges):
        length = 0.0 if k == last else length
        parts_root = _add(parts_root, bits, run, length, nruns, heights[k], ages[k], branch_rates(tree, k, last))
    return parts_root


def _load(stem: str, params):
    nruns = int(params.get("Nruns", 2))
    burnin = burnin_of(params)
    files = []
    for p in run_files(stem, nruns, "t"):
        check_exists(p)
        files.append(read_tfile(p))
    n_trees = len(files[0].trees)
    for f in files[1:]:
        if len(f.trees) != n_trees:
            raise InputFileError("found %d trees in first file but %d trees in this file"
                                 % (n_trees, len(f.trees)), Location(f.path))
        if f.taxa != files[0].taxa:
            raise InputFileError("translate block differs from that of %s" % files[0].path, Location(f.path))
    first = files[0].trees[0] if n_trees else None
    if first is not None and first.rooted and any(math.isnan(v) for _, v in first.lengths["edges"][:-1]):
        raise NotImplementedYet("sumt of rooted trees without branch lengths is not supported yet (MrBayes 3.2.7a "
                                "stops partway through their summary)", Location(files[0].path))
    if n_trees and files[0].trees[0].events:
        raise NotImplementedYet("sumt of compound-Poisson relaxed-clock trees ([&E ...] events) is not supported "
                                "yet", Location(files[0].path))
    drop = burnin.discard(n_trees)
    if drop >= n_trees:
        raise InputFileError("no trees are sampled as the burn-in exceeds the number of trees (%d)" % n_trees,
                             Location(files[0].path))
    return burnin, files, drop


def _count(files, drop, n_taxa, trees: bool, roots: tuple[int, int] | None = (0, 0)):
    """Split BST over the post-burn-in trees of all runs, and (`trees`) MrBayes' counter of topologies;
    unrooted trees hung at `roots` = (outgroup, where the first tree of run 1 hangs: outgroup.py), or (None)
    counted as they stand (pruned trees, hung before pruning: prune.py)."""
    nruns, root, topo, packed = len(files), None, TreeCounter(), {}
    for r, f in enumerate(files):
        for k, t in enumerate(f.trees[drop:]):
            edges = t.lengths["edges"] if t.rooted or roots is None else \
                hung_edges(t.topology, t.lengths["edges"], roots[1] if r == k == 0 else roots[0])
            root = _tree_parts(t, root, r, nruns, edges)
            if trees:
                key = (t.rooted, frozenset(b for b, _ in edges))        # the same tree packs the same
                if key not in packed:
                    packed[key] = order_array(t.topology, n_taxa, t.rooted, Location(f.path))
                topo.add(packed[key])
    return root, topo


def _check_brparams(files) -> None:
    """savebrparams needs branch lengths."""
    first = files[0].trees[0]
    if any(math.isnan(length) for bits, length in first.lengths["edges"] if bits & (bits - 1) == 0):
        raise InputFileError("savebrparams=yes: the trees have no branch lengths", Location(files[0].path))


def run_sumt(settings, console) -> dict:
    """The `sumt` command: print MrBayes' summary and write .parts .tstat .vstat .con.tre .trprobs, for
    each tree of `ntrees` in turn (sumt_trees.py).

    Returns the last tree's {'parts': [(id, picture, counts)], 'asdsf': float, 'msdsf': float}, with
    'trees': every tree's, for callers and tests.
    """
    params = dict(getattr(settings, "sumt", None) or {})
    stem = file_stem(settings, params)
    trees = tree_files(stem, output_stem(settings, params, stem), int(params.get("Ntrees", 1)))
    stale = stale_outgroup(settings)      # MrBayes roots only tree 1's first tree there (outgroup.py)
    remember_outgroup(settings)
    results = [_summarize_tree(settings, console, params, tree, stale if k == 0 else None)
               for k, tree in enumerate(trees)]
    return dict(results[-1], trees=results)


def _summarize_tree(settings, console, params: dict, tree: TreeFiles, stale: int | None) -> dict:
    """One tree's summary: its files read, its tables printed, its output files written; `stale`: where
    MrBayes hangs the first tree of run 1 (None: at the outgroup, as every tree after the first)."""
    sci, prec = number_format(settings)
    hpd = str(params.get("Hpd", "Yes")).lower().startswith("y")
    minpart = float(params.get("Minpartfreq", 0.10))
    halfcompat = str(params.get("Contype", "Halfcompat")).lower().startswith("h")
    burnin, files, drop = _load(tree.stem, params)
    pruned = deleted_names(settings, files[0].taxa)
    rooted = files[0].trees[0].rooted
    if rooted and pruned and files[0].trees[0].relaxed:
        raise NotImplementedYet("sumt of relaxed-clock trees with deleted taxa is not supported yet",
                                Location(files[0].path))
    numbers = [i for i, t in enumerate(files[0].taxa) if t not in pruned]      # as drawn: the file's numbers
    og_now = outgroup_index(settings, [t for t in files[0].taxa if t not in pruned])
    files = pruned_files(files, pruned, lambda r, k: stale if r == 0 and k == drop and stale is not None else og_now)
    out = tree.out
    taxa = files[0].taxa
    og = outgroup_index(settings, taxa)
    n, nruns = len(taxa), len(files)
    per_run = len(files[0].trees) - drop
    sampled = per_run * nruns
    calc, show, save = (str(params.get(k, d)).lower().startswith("y") for k, d in
                        (("Calctreeprobs", "Yes"), ("Showtreeprobs", "No"), ("Savebrparams", "No")))
    if save:
        _check_brparams(files)
    root, topo = _count(files, drop, n, calc, None if pruned else (og, og if stale is None else stale))
    parts = _preorder(root)
    min_count = minpart * (sampled // nruns)
    n_print = len(parts)
    i = 0
    while i < n_print:
        if any(c >= min_count for c in parts[i].count):
            i += 1
        else:
            n_print -= 1
            parts[i], parts[n_print] = parts[n_print], parts[i]
    mb_quicksort(parts, 0, n_print - 1, lambda p: p.total)
    _sort_terminals(parts, n)
    stamp = session_stamp(settings)
    head = "[ID: %s]\n" % stamp if len(stamp) > 1 else ""
    full = (1 << n) - 1
    lines = _intro(tree, nruns, burnin, files, sampled, per_run, minpart, taxa, pruned)
    parts_rows, screen_parts = [], []
    width_id = max(int(math.log10(n_print)) + 1, 2)
    for i in range(n_print):
        x = parts[i]
        if x.bits >> og & 1 and not rooted:
            x.bits ^= full
        nb = bin(x.bits).count("1")
        if (nb == n and not rooted) or nb == 0:
            continue
        pic = "".join("*" if x.bits >> k & 1 else "." for k in range(n))
        parts_rows.append("%d\t%s" % (i, pic))
        screen_parts.append("   %*d -- %s" % (width_id, i, pic))
    lines += results_banner(tree) + ["", '   Key to taxon bipartitions (saved to file "%s.parts"):' % out, "",
              "   %*s -- Partition" % (width_id, "ID"), "   " + "-" * min(width_id + 4 + n, 80)]
    lines += screen_parts + ["   " + "-" * min(width_id + 4 + n, 80), ""]
    _write(out + ".parts", head + "ID\tPartition\n" + "".join(r + "\n" for r in parts_rows))
    tst, scr, sds = _tstat(parts[:n_print], n, nruns, per_run, sampled, sci, prec, width_id, tree.screen_out, rooted)
    _write(out + ".tstat", head + tst)
    lines += scr
    vst, scr, psrfs = _vstat(parts[:n_print], nruns, hpd, sci, prec, tree.screen_out, files[-1].param, rooted)
    _write(out + ".vstat", head + vst)
    lines += scr
    if save:
        lines += ['   Saving branch parameters to file "%s.brparams"' % out, ""]
        _write(out + ".brparams", brparams_text(parts, float(params.get("Minbrparamfreq", 0.5)), per_run, sci, prec,
                                                length_name(files[-1].param)))
    avg_sd = sum(sds) / (n_print - n - 1) if n_print - n - 1 > 0 else float("nan")
    max_sd = max(sds) if sds else 0.0
    if nruns > 1:
        ok = [p for p in psrfs if p == p and p <= 10.0]
        mx = 10.0 if any(p > 10.0 for p in psrfs if p == p) else max(ok) if ok else 0.0
        lines += ["   Summary statistics for partitions with frequency >= %1.2f in at least one run:" % minpart,
                  "       Average standard deviation of split frequencies = %1.6f" % avg_sd,
                  "       Maximum standard deviation of split frequencies = %1.6f" % max_sd,
                  "       Average PSRF for parameter values (excluding NA and >10.0) = "
                  + c_fixed(sum(ok) / len(ok) if ok else _ZERO_BY_ZERO, 1, 3),
                  "       Maximum PSRF for parameter values = " + ("NA" if mx == 10.0 else "%1.3f" % mx)]
    lines.append("")
    allparts = parts[:]
    mb_quicksort(allparts, 0, len(allparts) - 1, lambda p: p.total)
    con = _consensus(allparts, n, sampled, halfcompat, og, rooted)
    if rooted:
        clock_lengths(con)
    lines += _drawings(con, taxa, numbers, sampled, rooted)
    simple = str(params.get("Conformat", "Figtree")) == "Simple"
    _write(out + ".con.tre", "#NEXUS\n" + head + _contree_text(con, allparts, taxa, per_run, halfcompat, hpd,
                                                               sci, prec, simple, rooted))
    if calc:
        text, scr = tree_probabilities(topo, taxa, sampled, files[0].trees[0].rooted, show)
        _write(out + ".trprobs", "#NEXUS\n" + head + text)
        lines += scr
    emit(console, "\n".join(lines))
    return dict(parts=[(i, p.bits, list(p.count)) for i, p in enumerate(parts[:n_print])],
                asdsf=avg_sd, msdsf=max_sd)


def _write(path: str, text: str) -> None:
    write_text_whole(path, text, "the summary file")


def _intro(tree: TreeFiles, nruns, burnin, files, sampled, per_run, minpart, taxa, pruned):
    stem, total = tree.stem, len(files[0].trees)
    first = ('   Summarizing trees in file "%s.t"' % stem if nruns == 1 else
             '   Summarizing trees in files "%s.run1.t" and "%s.run2.t"' % (stem, stem) if nruns == 2 else
             '   Summarizing trees in files "%s.run1.t", "%s.run2.t",...,"%s.run%d.t"' % (stem, stem, stem, nruns))
    lines = gap_before(tree) + [first, "   " + burnin.describe("sampled trees"),
             "   Writing statistics to files %s.<parts|tstat|vstat|trprobs|con>" % tree.screen_out,
             examining_line(tree, nruns),
             '   Found one tree block in file "%s" with %d trees in last block' % (files[0].path, total)]
    if nruns > 1:
        lines.append("   Expecting the same number of trees in the last tree block of all files")
    lines += ["", reading_status_line(tree), "",
              "   0      10      20      30      40      50      60      70      80      90     100",
              "   v-------v-------v-------v-------v-------v-------v-------v-------v-------v-------v",
              "   " + "*" * 81, ""] + pruned_lines(pruned)
    if nruns == 1:
        lines.append("   Read %d trees from last tree block (sampling %d of them)" % (total, sampled))
    else:
        lines += ["   Read a total of %d trees in %d files (sampling %d of them)" % (total * nruns, nruns, sampled),
                  "      (Each file contained %d trees of which %d were sampled)" % (total, per_run)]
    if tree.first:
        lines += general_explanation(minpart)
        lines += ["   %4d -- %s" % (k + 1, t) for k, t in enumerate(taxa)]
    return lines


def _tstat(parts, n, nruns, per_run, sampled, sci, prec, width_id, out, rooted: bool = False):
    """.tstat rows and the screen table for informative splits; also the std devs (for ASDSF)."""
    wnum = max(int(math.log10(parts[0].total)) + 1, 4)
    hdr = "   %*s   #obs" % (width_id, "ID") + " " * (wnum - 4) + "    Probab."
    width = width_id + 3 + 4 + (wnum - 4) + 11
    if nruns > 1:
        hdr += "     Sd(s)+      Min(s)      Max(s)   Nruns "
        width += 44
    scr = ["   Summary statistics for informative taxon bipartitions" + (" (clades)" if rooted else ""),
           '      (saved to file "%s.tstat"):' % out, "", hdr, "   " + "-" * width]
    rows = ["ID\t#obs\tProbability(=s)\tStddev(s)\tMin(s)\tMax(s)\tNruns" if nruns > 1 else
            "ID\t#obs\tProbability(=s)"]
    sds, unreliable = [], False
    for i, x in enumerate(parts):
        nb = bin(x.bits).count("1")
        if nb <= 1 or nb == n or (nb == n - 1 and not rooted):
            continue
        f = x.total / sampled
        line = "   %*d  %*d    %1.6f" % (width_id, i, wnum, x.total, f)
        row = "%d\t\t%d\t%s" % (i, x.total, mb_num(f, sci, prec))
        sd = 0.0
        if nruns > 1:
            fs = [c / per_run for c in x.count]
            s = sq = 0.0
            for v in fs:
                s += v
                sq += v * v
            var = (sq - s * s / nruns) / (nruns - 1)
            sd = math.sqrt(var) if var > 0.0 else 0.0
            k = sum(1 for c in x.count if c > 0)
            lo, hi = min([1.0] + fs), max([0.0] + fs)
            line += "    %1.6f    %1.6f    %1.6f  %3d" % (sd, lo, hi, k) + ("" if k == nruns else " *")
            row += "\t%s\t%s\t%s\t%d" % (mb_num(sd, sci, prec), mb_num(lo, sci, prec), mb_num(hi, sci, prec), k)
            unreliable |= k != nruns
        sds.append(sd)
        scr.append(line)
        rows.append(row)
    scr.append("   " + "-" * width)
    if nruns > 1:
        scr += ["   + Convergence diagnostic (standard deviation of split frequencies)",
                "     should approach 0.0 as runs converge.", ""]
    if unreliable:
        scr.append("   * The partition was not found in all runs so the values are unreliable")
    return "".join(r + "\n" for r in rows), scr, sds


def _vstat(parts, nruns, hpd, sci, prec, out, param: str = "tree", rooted: bool = False):
    """.vstat rows (length[i], `length{k}[i]` for a file of tree{k}, for every printed split but the root)
    and the screen table."""
    longest = max([9, int(math.log10(len(parts))) + 3 + len(param) + 2] +
                  [int(math.log10(len(parts))) + 3 + len(name) + 7 for name in parts[0].rates])
    pad = " " * max(1, longest - 9)
    width = 68 + longest - 9 + (17 if nruns > 1 else 0)
    scr = ["", "   Summary statistics for branch and node parameters", '      (saved to file "%s.vstat"):' % out, "",
           "   %*c                              95%% HPD Interval" % (longest, " ") if hpd else
           "   %*c                             95%% Cred. Interval" % (longest, " "),
           "   %*c                            --------------------" % (longest, " "),
           "   Parameter" + pad + "     Mean       Variance     Lower       Upper       Median" +
           ("     PSRF+  Nruns" if nruns > 1 else ""), "   " + "-" * width]
    head = "Parameter\tMean\tVariance\t" + ("CredInt_Lower\tCredInt_Upper" if hpd else "HPD_Lower\tHPD_Upper") + \
        "\tMedian" + ("\tPSRF\tNruns" if nruns > 1 else "") + "\n"
    rows, psrfs = [head], []
    for name, x, samples in vstat_rows(parts, length_name(param), rooted):
        st = _summary(samples, hpd)
        line = "   %-*s  %10.6f  %10.6f  %10.6f  %10.6f  %10.6f" % (longest, name, st["mean"], st["var"],
                                                                   st["lower"], st["upper"], st["median"])
        row = name + "".join("\t" + mb_num(st[k], sci, prec) for k in ("mean", "var", "lower", "upper", "median"))
        if nruns > 1:
            k = sum(1 for c in x.count if c > 0)
            p = st["psrf"] if k == nruns else float("nan")
            if p != p:
                line += "     NA    %3d" % k
                row += "\tNA\t%d" % k
            elif p > 10.0:
                line += "    >10.0  %3d" % k
                row += "\tNA\t%d" % k
            else:
                line += "  %7.3f  %3d" % (p, k)
                row += "\t%s\t%d" % (mb_num(p, sci, prec), k)
            psrfs.append(p)
            if k != nruns:
                line += " *"
        scr.append(line)
        rows.append(row + "\n")
    scr.append("   " + "-" * width)
    if nruns > 1:
        scr += ["   + Convergence diagnostic (PSRF = Potential Scale Reduction Factor; Gelman",
                "     and Rubin, 1992) should approach 1.0 as runs converge. NA is reported when",
                "     deviation of parameter values within all runs is 0 or when a parameter",
                "     value (a branch length, for instance) is not sampled in all runs."]
    if any(sum(1 for c in x.count if c > 0) != nruns for x in parts[1:]):
        scr.append("   * The partition was not found in all runs so the values are unreliable.")
    scr += ["", ""]
    return "".join(rows), scr, psrfs


class _Node:
    __slots__ = ("kids", "anc", "tip", "x", "bits", "part", "length", "plain_length")

    def __init__(self, tip, x, bits):
        self.kids, self.anc, self.tip, self.x, self.bits = [], None, tip, x, bits
        self.part, self.length = None, -1.0
        self.plain_length: float | None = None      # clock trees: the length conformat=simple prints


def _consensus(parts, n, sampled, halfcompat, og: int = 0, rooted: bool = False):
    """ConTree: resolve a bush (the outgroup first) by splits in order of frequency, skipping incompatible
    ones. The splits are taken as the listing left them: those listed turned to the side without the
    outgroup, the others as counted (their outgroup side only where outgroup.py's quirk keyed them so)."""
    full = (1 << n) - 1
    root = _Node(None, n, full)
    tips = [_Node(k, 1, 1 << k) for k in range(n)]
    for t in tips if rooted else [tips[og]] + tips[:og] + tips[og + 1:]:
        t.anc = root
        root.kids.append(t)
    n_nodes, target, n_tips_seen = n + 1, 2 * n - (2 if rooted else 3), 0
    for x in parts:
        if n_nodes > target and n_tips_seen == n and (root.part is not None or not rooted):
            break
        freq = x.total / sampled
        if freq < 0.50 and halfcompat:
            break
        bits = x.bits
        nb = bin(bits).count("1")
        if nb == n or nb == 0:
            root.part = x
        elif nb > 1 and (nb != n - 1 or rooted):
            low = (bits & -bits).bit_length() - 1
            p = tips[low]
            while p is not None and p.x <= nb:
                p = p.anc
            if p.anc is not None and bits | p.bits != p.bits:
                continue
            if any(q.x > 1 and not (q.bits & bits == 0 or q.bits | bits in (bits, q.bits)) for q in p.kids):
                continue
            q = _Node(None, nb, bits)
            q.part = x
            q.length = _summary(x.lengths, True)["median"]
            inside = [r for r in p.kids if r.bits | bits == bits]
            p.kids = [r for r in p.kids if r.bits | bits != bits] + [q]
            for r in inside:
                r.anc = q
            q.kids, q.anc = inside, p
            n_nodes += 1
        else:
            j = og if nb == n - 1 else (bits & -bits).bit_length() - 1
            tips[j].part = x
            tips[j].length = _summary(x.lengths, True)["median"]
            n_tips_seen += 1
    _order_tips(root)
    return root


def _draw_tree(node, taxa, numbers, sampled: int, rooted: bool = False) -> DrawNode:
    """The consensus as condraw's nodes: names and numbers (in the tree files, before pruning), support
    (the split's share of all sampled trees, as MrBayes puts on its drawing) and median branch lengths."""
    if node.tip is not None:
        d = DrawNode(numbers[node.tip], taxa[node.tip], length=node.length)
        d.height = node_age(node.part) if rooted else None
        return d
    d = DrawNode(support=node.part.total / sampled if node.part is not None else 0.0, length=node.length)
    d.height = node_age(node.part) if rooted else None
    d.kids = [_draw_tree(k, taxa, numbers, sampled, rooted) for k in node.kids]
    for k in d.kids:
        k.anc = d
    return d


def _drawings(con, taxa, numbers, sampled: int, rooted: bool = False) -> list[str]:
    """'Clade credibility values:' and, where the trees have branch lengths, the phylogram."""
    lines = ["", "   Clade credibility values:", ""] + credibility_tree(_draw_tree(con, taxa, numbers, sampled))
    drawn = phylogram(_draw_tree(con, taxa, numbers, sampled, rooted), rooted and has_ages([con.part]))
    if drawn is not None:
        lines += ["", "   Phylogram (based on %s):" % ("median node depths" if rooted else "average branch lengths"),
                  ""] + drawn + [""]
    return lines


def _order_tips(node, root: bool = True) -> int:
    """Order children by the smallest taxon index below them (MrBayes' OrderTips), except the root's,
    which keep the order the consensus was built in (OrderTips skips the node without an ancestor)."""
    if node.tip is not None:
        return node.tip
    keyed = [(_order_tips(k, False), k) for k in node.kids]
    if not root:
        keyed.sort(key=lambda t: t[0])
        node.kids = [k for _, k in keyed]
    return min(t[0] for t in keyed)


def _node_info(x, length, per_run, nruns, hpd, sci, prec, rooted: bool = False):
    """PrintFigTreeNodeInfo: support annotations, the median length, the length annotations."""
    sup = [c / per_run for c in x.count]
    if nruns > 1:
        mean, var = mean_variance(sup)
        sd = math.sqrt(var)
        pc, sdp = int(100.0 * mean + 0.5), int(100.0 * sd + 0.5)
        s = ('[&prob=%.8e,prob_stddev=%.8e,prob_range={%.8e,%.8e},prob(percent)="%d",prob+-sd="%d+-%d"'
             % (mean, sd, min(sup), max(sup), pc, pc, sdp))
    else:
        s = '[&prob=%.8e,prob(percent)="%d"' % (sup[0], int(100.0 * sup[0] + 0.5))
    s += (height_annotations(x, hpd) if rooted else "") + "]"
    if length >= 0.0:
        s += ":" + mb_num(length, sci, prec)
    st = _summary(x.lengths, hpd)
    s += "[&length_mean=%.8e,length_median=%.8e,length_95%%%s={%.8e,%.8e}%s]" % (
        st["mean"], st["median"], "HPD" if hpd else "CredInt", st["lower"], st["upper"], rate_annotations(x, hpd))
    return s


_SIMPLE_NOTES = ("   [Note: This tree contains information on the topology, \n"
                 "          branch lengths (if present), and the probability\n"
                 "          of the partition indicated by the branch.]\n",
                 "   [Note: This tree contains information only on the topology\n"
                 "          and branch lengths (median of the posterior probability density).]\n")


def _contree_text(root, parts, taxa, per_run, halfcompat, hpd, sci, prec, simple: bool = False,
                  rooted: bool = False):
    """The .con.tre body: FigTree annotations (`conformat=figtree`), or MrBayes' simple format, the tree
    twice: with each partition's probability (%.3f) as an internal label, then without."""
    nruns = len(parts[0].count)

    def write(v) -> str:
        body = "%d" % (v.tip + 1) if v.tip is not None else "(" + ",".join(write(k) for k in v.kids) + ")"
        return body + (_node_info(v.part, v.length, per_run, nruns, hpd, sci, prec, rooted)
                       if v.part is not None else "")

    def plain(v, labels: bool) -> str:
        if v.tip is not None:
            body = "%d" % (v.tip + 1)
        else:
            body = "(" + ",".join(plain(k, labels) for k in v.kids) + ")"
            if labels and v.part is not None:
                body += "%.3f" % _support(v.part, per_run)
        length = v.length if v.plain_length is None else v.plain_length
        return body + (":" + mb_num(length, sci, prec) if v.part is not None and v.length >= 0.0 else "")

    text = "begin taxa;\n\tdimensions ntax=%d;\n\ttaxlabels\n" % len(taxa)
    text += "".join("\t\t%s\n" % t for t in taxa) + "\t\t;\nend;\nbegin trees;\n\ttranslate\n"
    text += "".join("\t\t%d\t%s%s\n" % (k + 1, t, "" if k == len(taxa) - 1 else ",") for k, t in enumerate(taxa))
    name = "con_50_majrule" if halfcompat else "con_all_compat"
    if simple:
        trees = ["%s   tree %s = (%s);\n" % (note, name, ",".join(plain(k, labels) for k in root.kids))
                 for note, labels in zip(_SIMPLE_NOTES, (True, False))]
        return text + "\t\t;\n" + "\n".join(trees) + "end;\n"
    text += "\t\t;\n   tree %s = [&%s] " % (name, "R" if rooted else "U")
    text += (write(root) if rooted else "(" + ",".join(write(k) for k in root.kids) + ")") + ";\nend;\n"
    return text


def _support(x, per_run) -> float:
    """A partition's posterior probability: the mean over runs of its frequency."""
    sup = [c / per_run for c in x.count]
    return mean_variance(sup)[0] if len(sup) > 1 else sup[0]
