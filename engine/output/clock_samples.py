"""What a sample of a chain's clock tree puts in the `.p` and `.t` files: the `TH TL` values that open the
row, the clock parameters' values that close it (paramnames.clock_columns' order), and the tree text."""
from __future__ import annotations

from mbgpu.output.paramnames import clock_columns
from mbgpu.output.tfile import format_length


def head_values(tree) -> list[float]:
    """TH and TL (substitution units)."""
    return [tree.height, float(tree.brlen.sum())]


def tail_values(tree) -> list[float]:
    """The free clock parameters' values, in the header's order."""
    out = []
    for col in clock_columns(tree.frame.model):
        if col == "clockrate":
            out.append(tree.clock_rate)
        elif col:
            out += [float(x) for x in tree.params[col]]
    return out


def rooted_newick(tree, scientific: bool = True, precision: int = 6) -> str:
    """`[&R] (...)` of the rooted tree with 1-based tip numbers, `[&clockrate=x]` first when the clock rate
    is free; children in increasing node order."""
    st = tree.state
    lengths = st.depth[st.parent] - st.depth
    root = int((st.parent < 0).nonzero()[0][0])

    def text(v: int) -> str:
        if v < st.n_tips:
            body = str(v + 1)
        else:
            body = "(%s)" % ",".join(text(int(c)) for c in sorted(st.kids[v]))
        return body if v == root else "%s:%s" % (body, format_length(float(lengths[v]), scientific, precision))

    rate = "" if tree.frame.model.clock_rate.family == "Fixed" else "[&clockrate=%s] " % format_length(
        tree.clock_rate, scientific, precision)
    return "[&R] " + rate + text(root)
