"""The compound Poisson clock's events through the core's clock tree moves (mbgpu.core.clock_moves), as
MrBayes 3.2.7a's tree moves carry them (proposal.c): NodesliderClock, TreeStretch and NNIClock keep every
event at its relative place on its branch and add Σ n_events ln(new length / old length) over the branches
whose length changed; ExtSPRClock and ParsSPRClock merge the pruned node's parent u into its sister's branch
(relaxed_lengths.cpp_merge), split the target branch at u's new depth (cpp_split), both keeping absolute
places, and add the pruned branch's n_events ln(new / old). Lengths are MrBayes' (ClockArgs.brlen rows).
"""
from __future__ import annotations

import math

import numba

from mbgpu.clock.relaxed_lengths import cpp_merge, cpp_split
from mbgpu.jit import JIT_OPTIONS


@numba.njit(**JIT_OPTIONS)
def _sister(kids, u, v) -> int:
    return kids[u, 1] if kids[u, 0] == v else kids[u, 0]


@numba.njit(**JIT_OPTIONS)
def carry_events(c, ck, v) -> float:
    """Chain c's proposal events after its tree move (v: the pruned node of an SPR move, else -1); the log
    proposal term, -inf when a merged branch would overflow its row (never after ClockRows.grow_events)."""
    old, new = ck.brlen[c], ck.brlen_p[c]
    n_ev, pos, mult = ck.n_events_p[c], ck.positions_p[c], ck.mults_p[c]
    if v < 0:
        r = 0.0
        for w in range(n_ev.shape[0]):
            if ck.parent_p[c, w] >= 0 and n_ev[w] > 0 and new[w] != old[w]:
                r += n_ev[w] * math.log(new[w] / old[w])
        return r
    u = ck.parent_p[c, v]
    a_old, a_new = _sister(ck.kids[c], u, v), _sister(ck.kids_p[c], u, v)
    if not cpp_merge(a_old, u, n_ev, pos, mult, old[a_old], old[u]):
        return -math.inf
    if not cpp_split(a_new, u, n_ev, pos, mult, new[a_new], new[u]):
        return -math.inf
    return n_ev[v] * math.log(new[v] / old[v]) if n_ev[v] > 0 else 0.0
