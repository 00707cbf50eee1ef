"""A clock tree's `.t` line and `.p` values as MrBayes 3.2.7a writes them (PrintTree, PrintStates, TreeLength,
PropAncFossil in mcmc.c), from plain arrays so that the sampler's state can call them.

`.t`: `   tree gen.N` then `clock_tree_text(...)`: ` [&B IgrBrlens]` / ` [&B TK02Brlens]` / (cpp) ` [&E CppEvents]`
twice (MrBayes' PrintTree adds that string twice), ` = [&R] `, `[&clockrate=x] ` when the tree is
calibrated (`prset nodeagepr=calibrated`) or its clock rate is free, then the Newick of the rooted tree from
the root's children, each node's children in the order given (MrBayes' left, right; for a startvals tree
the written order, `ClockStart.written_kids`), tips by translate number, lengths in substitution units with
`set scientific/precision`, and after each length `[&B NAME x]` (x the effective length) or `[&E NAME k][&B
NAME x]` (k CPP events); NAME carries the `{all}` suffix of a partitioned analysis. A sampled ancestor is
the tip on its zero-length branch, printed in place. The file's header (translate block, `[Param: tree{all}]`)
is the one of unrooted trees (TFileWriter).
`.p`: `TH TL [n_CPP] [prop_ancfossil]` before the substitution columns, the free clock parameters after
(mbgpu.output.paramnames.clock_pfile_header); n_CPP is printed with `%d` (PFileWriter prints ints so).
"""
from __future__ import annotations

import numpy as np

from mbgpu.clock.rooted import branch_lengths, root_of
from mbgpu.output.paramnames import clock_columns, part_suffix
from mbgpu.output.tfile import format_length

BRANCH_SET = {"igr": "IgrBrlens", "tk02": "TK02Brlens", "cpp": "CppEvents"}   # MrBayes' relaxed-clock names


def prints_clock_rate(model) -> bool:
    """MrBayes writes `[&clockrate=...]` for a calibrated tree (tree->isCalibrated): measured, that is
    `nodeagepr=calibrated` or a clock rate that is not fixed."""
    return model.calibrated or model.clock_rate.family != "Fixed"


def branch_set_name(model, n_divisions: int) -> str | None:
    """The relaxed clock's per-branch parameter name in the .t file (`IgrBrlens{all}` when partitioned)."""
    name = BRANCH_SET.get(model.clock_var)
    return None if name is None else name + part_suffix(model.divisions, n_divisions)


def order_taxa_root(kids: np.ndarray, parent: np.ndarray, n_tips: int, outgroup: int) -> np.ndarray:
    """`mcmc ordertaxa=yes`: MrBayes' PrintTree labels nodes with their smallest taxon (the outgroup -1) but
    its swapping loop only reaches the root, so only the root's children are ordered (smaller first)."""
    out = kids.copy()
    low = np.arange(parent.shape[0], dtype=np.int64)
    low[outgroup] = -1
    for v in postorder(kids, root_of(parent), n_tips):
        if v >= n_tips:
            low[v] = min(low[kids[v, 0]], low[kids[v, 1]])
    root = root_of(parent)
    if low[out[root, 0]] > low[out[root, 1]]:
        out[root] = out[root, ::-1]
    return out


def postorder(kids: np.ndarray, root: int, n_tips: int) -> list[int]:
    """Nodes children first, left subtree before right (MrBayes' allDownPass for its left/right)."""
    out, stack = [], [(root, False)]
    while stack:
        v, done = stack.pop()
        if done or v < n_tips:
            out.append(v)
            continue
        stack += [(v, True), (int(kids[v, 1]), False), (int(kids[v, 0]), False)]
    return out


def clock_tree_text(parent: np.ndarray, kids: np.ndarray, depth: np.ndarray, n_tips: int, *,
                    lengths: np.ndarray | None = None, clock_rate: float | None = None,
                    branch_set: str | None = None, eff: np.ndarray | None = None,
                    n_events: np.ndarray | None = None, scientific: bool = True, precision: int = 6) -> str:
    """What follows `tree gen.N` on a clock tree's `.t` line (without the `;`): `[&B NAME] = [&R] (...)` etc.

    `lengths`: branch lengths (default: parent depth - depth; at Gen 0 MrBayes prints the start tree's own,
    ClockStart.brlen); `clock_rate`: None where MrBayes prints no `[&clockrate]` (prints_clock_rate);
    `branch_set`: branch_set_name (None for a strict clock), with `eff` the effective lengths and, for CPP,
    `n_events` the events per branch.
    """
    fmt = lambda x: format_length(float(x), scientific, precision)  # noqa: E731
    lengths = branch_lengths(parent, depth) if lengths is None else lengths
    cpp = branch_set is not None and branch_set.startswith(BRANCH_SET["cpp"])
    if cpp and n_events is None:
        n_events = np.zeros(parent.shape[0], dtype=np.int64)
    head = ""
    if branch_set is not None:
        head = (" [&E %s]" % branch_set) * 2 if cpp else " [&B %s]" % branch_set
    head += " = [&R] " + ("" if clock_rate is None else "[&clockrate=%s] " % fmt(clock_rate))

    def label(v: int) -> str:
        text = ":" + fmt(lengths[v])
        if cpp:
            text += "[&E %s %d]" % (branch_set, int(n_events[v]))
        if branch_set is not None:
            text += "[&B %s %s]" % (branch_set, fmt(eff[v]))
        return text

    root = root_of(parent)
    written: dict[int, str] = {}
    for v in postorder(kids, root, n_tips):
        body = str(v + 1) if v < n_tips else "(%s,%s)" % (written.pop(int(kids[v, 0])), written.pop(int(kids[v, 1])))
        written[v] = body if v == root else body + label(v)
    return head.lstrip() + written[root]


def tree_length(parent: np.ndarray, kids: np.ndarray, lengths: np.ndarray, n_tips: int) -> float:
    """TL: MrBayes' TreeLength, the branch lengths summed in its down pass (substitution units)."""
    root = root_of(parent)
    total = 0.0
    for v in postorder(kids, root, n_tips):
        if v != root:
            total += float(lengths[v])
    return total


def prop_anc_fossil(depth: np.ndarray, lengths: np.ndarray, n_tips: int) -> float:
    """prop_ancfossil (PropAncFossil): of the tips older than 0, the share on zero-length branches (sampled
    ancestors); 0 without fossils."""
    fossils = [v for v in range(n_tips) if depth[v] > 0.0]
    k = sum(1 for v in fossils if not lengths[v] > 0.0)
    return 0.0 if k == 0 else k / len(fossils)


def clock_pfile_values(model, parent: np.ndarray, kids: np.ndarray, depth: np.ndarray, n_tips: int,
                       values: dict, *, lengths: np.ndarray | None = None,
                       n_events: np.ndarray | None = None) -> tuple[list, list]:
    """(head, tail): the `.p` values of clock_pfile_header's columns before the substitution ones (TH, TL,
    n_CPP as an int, prop_ancfossil) and after them (the free clock parameters, from `values` by `.p` label
    as ClockModel.starts() names them; relative_fossilization a tuple under fossil-sampling shifts, oldest
    interval first, one value per interval: MrBayes' header has one name more)."""
    lengths = branch_lengths(parent, depth) if lengths is None else lengths
    root = root_of(parent)
    head = [float(depth[root]), tree_length(parent, kids, lengths, n_tips)]
    if model.clock_var == "cpp":
        head.append(int(np.sum(n_events)) if n_events is not None else 0)
    if model.tree_prior == "fossilization":
        head.append(prop_anc_fossil(depth, lengths, n_tips))
    tail: list = []
    for label in clock_columns(model):
        if label.startswith("relative_fossilization_"):
            continue
        tail += [float(x) for x in np.atleast_1d(values[label or "relative_fossilization"])]
    return head, tail
