"""`sumt` of clock (rooted) trees, the parts MrBayes 3.2.7a adds for them: `height[i]` (and `age[i]` when
the trees carry `[&clockrate=...]`) rows of the .vstat, the node height/age annotations of the .con.tre,
and the consensus branch lengths, which are differences of median node ages (heights with a fixed rate)
rather than median branch lengths."""
from __future__ import annotations

from mbgpu.diagnostics import mean_variance
from mbgpu.summary.sump import hpd_median


def has_ages(parts) -> bool:
    """Whether the trees carried a clock rate (MrBayes' isCalibrated): node ages are then summarized."""
    return any(r for r in parts[0].ages)


def vstat_rows(parts, length_name: str, rooted: bool):
    """(name, split, samples by run) for the .vstat: lengths of every split but the root, then, for clock
    trees, the heights of every split, root first, then their ages."""
    rows = [("%s[%d]" % (length_name, i), x, x.lengths) for i, x in enumerate(parts) if i > 0]
    if rooted:
        rows += [("height[%d]" % i, x, x.heights) for i, x in enumerate(parts)]
        if has_ages(parts):
            rows += [("age[%d]" % i, x, x.ages) for i, x in enumerate(parts)]
        for name in parts[0].rates:
            for k, tag in enumerate(("length", "rate")):
                rows += [("%s_%s[%d]" % (name, tag, i), x, x.rates[name][k]) for i, x in enumerate(parts) if i > 0]
    return rows


def branch_rates(tree, k: int, last: int) -> list[tuple[str, float, float]]:
    """(set name, effective branch length, rate) of edge k of a relaxed-clock tree for each `[&B ...]`
    set: the written value and its ratio to the branch length; the root's are 1."""
    if k == last:
        return [(name, 1.0, 1.0) for name in tree.branch_sets]
    length = tree.lengths["edges"][k][1]
    return [(name, v[k], v[k] / length) for name, v in tree.branch_sets.items()]


def rate_annotations(x, hpd: bool) -> str:
    """`,effectivebrlen{set}_mean=...,rate{set}_...` (`%f`) after the length annotations, per set."""
    out = ""
    for name, samples in x.rates.items():
        for tag, runs in (("effectivebrlen", samples[0]), ("rate", samples[1])):
            values = [v for r in runs for v in r]
            lo, hi, med = hpd_median(values, hpd)
            out += ",%s%s_mean=%f,%s%s_median=%f,%s%s_95%%%s={%f,%f}" % (
                tag, name, mean_variance(values)[0], tag, name, med, tag, name, "HPD" if hpd else "CredInt", lo, hi)
    return out


def _median(runs) -> float:
    return hpd_median([v for r in runs for v in r], True)[2]


def node_age(x) -> float:
    """A consensus node's median age (its median height where the clock rate is fixed)."""
    return _median(x.ages if has_ages([x]) else x.heights)


def clock_lengths(root) -> None:
    """The consensus branch lengths MrBayes prints after ':' for clock trees: the parent's median age
    minus the node's (median heights where the clock rate is fixed); the root keeps none. With
    conformat=simple MrBayes prints differences of median heights even where ages are known."""
    def walk(node, parent: tuple[float, float] | None) -> None:
        own = (node_age(node.part), _median(node.part.heights))
        if parent is not None:
            node.length, node.plain_length = parent[0] - own[0], parent[1] - own[1]
        for k in node.kids:
            walk(k, own)
    walk(root, None)


def height_annotations(x, hpd: bool) -> str:
    """`,height_mean=...,height_median=...,height_95%HPD={..}` and the same for ages when sampled."""
    out = ""
    for name, runs in (("height", x.heights), ("age", x.ages)):
        values = [v for r in runs for v in r]
        if not values:
            continue
        mean = mean_variance(values)[0]
        lo, hi, med = hpd_median(values, hpd)
        out += ",%s_mean=%.8e,%s_median=%.8e,%s_95%%%s={%.8e,%.8e}" % (
            name, mean, name, med, name, "HPD" if hpd else "CredInt", lo, hi)
    return out
