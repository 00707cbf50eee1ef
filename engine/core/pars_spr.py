"""Compiled ParsSPR(Tau,V): SPR with the regraft point drawn by Fitch parsimony (MrBayes Move_ParsSPR).

A port of mbgpu.moves.pars_spr (with mbgpu.moves.parsimony, mbgpu.moves.bitplanes,
mbgpu.moves.weight_noise and the graph helpers of mbgpu.moves.graph) acting on one chain's node arrays
(engine/core/trees.py) in place; the Python module is the specification, docs/moves.md explains it.

A branch u-sub (not the anchor tip's) is drawn uniformly; the subtree S on sub's side (away from the
anchor) is pruned with its attachment node u and u's two other branches a-u, u-b are joined into a-b.
Every other branch x-y of the rest R is a candidate, of cost sum over partitions of
    -warp log(1/k - exp(-k/(k-1) v_t rate)/k) * (weighted count of patterns where S's Fitch downpass set
                                                  meets neither final set at x nor at y)
(R rooted at the anchor tip), with each pattern's weight perturbed by r per site; a candidate is drawn
with probability exp(-cost)/sum (the joined branch excluded), and log Hastings is
    [-cost(old) - log sum_{!=new}] - [-cost(new) - log sum_{!=old}]
with over/underflow-safe log sums, plus the log ratios of three Larget-Simon multipliers (lambda) on the
joined branch (it keeps the far-side length), x-u (u carries its near-side branch) and u-y (keeps x-y's).

Data, computed once per analysis by `prepare_pars_data` (plain numpy arrays, shared read-only by every
chain and thread): a tuple `data` =
    tip_planes  uint64[n_tips, n_cols]  each partition's state-set masks as bit planes: partition i's
                                        columns col_off .. col_off + k_i * W_i, plane-major ([k_i][W_i]),
                                        the pattern at position j in bit j % 64 of word j // 64
                                        (bitplanes.pack_masks); positions hold the patterns sorted by
                                        site count, so the high weight planes are short (see gidx)
    info        int64[n_parts, 11]      (k_planes, W, col_off, word_off, pat_off, n_patterns, plane_off,
                                         n_bits, integer, group_first, group_end): integer = 1 when the
                                        weights are whole (the weighted counts are then popcounts against
                                        weight bit planes); groups[group_first:group_end] its count groups
    part_f      float64[n_parts, 2]     (k, rate) of the cost factor (n_states / rate_mults, or inferred / 1)
    base_w      float64[n_pat_total]    pattern weights (all partitions, at pat_off; by position, as
                                        are base_i, count and base_planes)
    base_i      int64[n_pat_total]      the same as integers (integer partitions; 0 elsewhere)
    count       int64[n_pat_total]      sites per pattern, ceil(w) (weight_noise.WeightNoise.count)
    base_planes uint64[...]             bit planes of base_i, [n_bits][W] at plane_off; n_bits covers
                                        base + count, the largest perturbed weight
    gidx        int64[n_pat_total]      the pattern (index within its partition) at each position: the
                                        partition's patterns sorted by count, stably
    groups      int64[n_groups, 3]      (c, first, end): positions first..end-1 hold the patterns of
                                        c > 0 sites
    cdf         float64[...]            inverse-CDF tables of the summed per-site steps for c sites:
                                        step_cdf(c, r)[:-1] (2c values) at tab_off[c]
    tab_off     int64[TABLE_MAX + 1]    (-1: no table); counts above TABLE_MAX draw TABLE_MAX-site chunks
    noise       float64[4]              (r the tables were made for, P(-1), P(+1) per site, 1 if tables)
    threads     uint64[7]               the pass array: numba threads the Fitch pass may use (spans of
                                        words, SPAN_WORK; the caller holds numba's thread count to it,
                                        pars_threads), then a site-split group's ranks, this rank, and
                                        MPI_Allreduce's address, communicator, int64 type and sum op
                                        (PASS_*; 1 rank: the whole pass here)

Call `pars_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi, anchor, *data)`; `tuning` is float64[4]
= (warp, r, v_t, lambda), the order of ParsSPR.default_tuning (PARS_SPR_TUNING); lo, hi the
branch-length limits (moves.base.brlen_bounds); anchor the tip R is rooted at (MoveContext.anchor).
Weight noise r must be the r given to prepare_pars_data to use the tables; another r falls back to one
uniform per site (exact, slower). Costs are the Python's to the last bit (same integer counts, same
float operations in the same order); random draws come in another order.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

from mbgpu.core.rng import randint, uniform
from mbgpu.core.branch_moves import multiply
from mbgpu.core.trees import root_of
from mbgpu.jit import JIT_OPTIONS
from mbgpu.native_calls import call6

PARS_SPR_TUNING = np.array([0.1, 0.05, 0.03, 0.098])   # (warp, r, v_t, lambda), ParsSPR.default_tuning
SPAN_WORK = 448          # words x planes a thread takes at least in the Fitch pass (~30-60 us of work)
SPAN_MAX = 8             # spans at most (16-core GPU host: 8 threads beat 4 and 16; see pars_threads)
TABLE_MAX = 256          # step tables for patterns of up to this many sites; larger ones draw in chunks
_INFO_COLS = 11
# the pass array (uint64, prepare_pars_data's last): numba threads for the Fitch pass; then, for a site-split
# group's ranks (mbgpu.mpi.native_allreduce.int64_sum; 1 rank: no split), each rank counts its share of
# the words and MPI_Allreduce (called by address) sums the counts, exactly, so every rank draws alike
PASS_THREADS, PASS_RANKS, PASS_RANK, PASS_FN, PASS_COMM, PASS_TYPE, PASS_OP = range(7)


# ---------------------------------------------------------------------- preparation (plain numpy)
def _infer_n_states(masks: np.ndarray) -> int:
    """As mbgpu.moves.parsimony.infer_n_states: the highest bit used by any mask (at least 2)."""
    top = int(np.bitwise_or.reduce(masks, axis=None)) if masks.size else 1
    return max(top.bit_length(), 2)


def _pack_rows(bits: np.ndarray, n_words: int) -> np.ndarray:
    """bool [rows, n] -> uint64 [rows, n_words], column j in bit j % 64 of word j // 64."""
    out = np.zeros((bits.shape[0], n_words * 8), dtype=np.uint8)
    if bits.shape[1]:
        packed = np.packbits(bits, axis=-1, bitorder="little")
        out[:, :packed.shape[1]] = packed
    return np.ascontiguousarray(out).view("<u8").astype(np.uint64).reshape(bits.shape[0], n_words)


def site_pmf(r: float) -> np.ndarray | None:
    """P(-1), P(0), P(+1) of one site's weight step at r, as the Python draw (None: no noise).

    0 < r < 0.5: (r, 1 - 2r, r); r >= 0.5: the Python's binomial path, up ~ Bin(c, r), down = c - up,
    i.e. +1 w.p. min(r, 1) and -1 otherwise."""
    if not r > 0.0:
        return None
    if r < 0.5:
        return np.array([r, 1.0 - 2.0 * r, r])
    p = min(r, 1.0)
    return np.array([1.0 - p, 0.0, p])


def pars_threads(available: int) -> int:
    """The threads ParsSPR's Fitch pass uses of `available` (numba's count): waking more than SPAN_MAX
    cost more than they saved on the 16-core GPU host (docs/performance.md)."""
    return max(1, min(int(available), SPAN_MAX))


def prepare_pars_data(pattern_masks, n_states=None, rate_mults=None, n_tips: int | None = None,
                      r: float = 0.05, threads: int = 1) -> tuple:
    """The arrays `pars_spr` takes after `anchor` (see the module docstring), from MoveContext's
    pattern_masks (per partition (uint32 masks [n_tips, n_patterns], weights)), n_states and
    rate_mults (None: inferred from the masks / 1.0), for weight noise r (ParsSPR's tuning "r"), the
    Fitch pass on up to `threads` of numba's threads (the results do not depend on it)."""
    parts = list(pattern_masks)
    if n_tips is None:
        if not parts:
            raise ValueError("prepare_pars_data needs n_tips when there is no data")
        n_tips = int(np.asarray(parts[0][0]).shape[0])
    info = np.zeros((len(parts), _INFO_COLS), dtype=np.int64)
    part_f = np.zeros((len(parts), 2))
    tips, ws, ints, counts, planes, gidx, groups = [], [], [], [], [], [], []
    col = word = pat = plane = 0
    for i, (masks, weights) in enumerate(parts):
        w = np.asarray(weights, dtype=np.float64).ravel()
        by_count = np.argsort(np.maximum(np.ceil(w - 1e-9), 0), kind="stable")   # position -> pattern
        m = np.asarray(masks)[:n_tips].astype(np.uint64)[:, by_count]
        w = w[by_count]
        n_pat = m.shape[1]
        assert w.size == n_pat, "one weight per pattern"
        k_planes = _infer_n_states(m)
        n_words = (n_pat + 63) // 64
        shifts = np.arange(k_planes, dtype=np.uint64)[None, :, None]
        bits = ((m[:, None, :] >> shifts) & np.uint64(1)).astype(bool).reshape(n_tips * k_planes, n_pat)
        tips.append(_pack_rows(bits, n_words).reshape(n_tips, k_planes * n_words))
        count = np.maximum(np.ceil(w - 1e-9), 0).astype(np.int64)
        base = w.astype(np.int64)
        whole = bool(n_pat) and np.array_equal(base, w) and base.min() >= 0 and base.max() < 2 ** 40
        n_bits = 0
        if whole:
            n_bits = max(int((base + count).max()).bit_length(), 1)
            wbits = ((base[None, :] >> np.arange(n_bits, dtype=np.int64)[:, None]) & 1).astype(bool)
            planes.append(_pack_rows(wbits, n_words).ravel())
        else:
            base = np.zeros(n_pat, dtype=np.int64)
        g_first = len(groups)
        for c in np.unique(count[count > 0]).tolist():        # count is sorted: groups are position ranges
            lo_, hi_ = np.searchsorted(count, [c, c + 1])
            groups.append((c, pat + lo_, pat + hi_))
        gidx.append(by_count)
        info[i] = (k_planes, n_words, col, word, pat, n_pat, plane, n_bits, int(whole), g_first, len(groups))
        part_f[i] = (float(n_states[i]) if n_states else float(k_planes),
                     float(rate_mults[i]) if rate_mults else 1.0)
        ws.append(w)
        ints.append(base)
        counts.append(count)
        col += k_planes * n_words
        word += n_words
        pat += n_pat
        plane += n_bits * n_words
    tip_planes = (np.ascontiguousarray(np.concatenate(tips, axis=1)) if tips
                  else np.zeros((n_tips, 0), dtype=np.uint64))
    cat = lambda xs, dt: np.ascontiguousarray(np.concatenate(xs)).astype(dt) if xs else np.zeros(0, dt)
    count_all = cat(counts, np.int64)
    cdf, tab_off, noise = _noise_tables(count_all, float(r))
    group_arr = np.array(groups, dtype=np.int64).reshape(len(groups), 3)
    return (tip_planes, info, part_f, cat(ws, np.float64), cat(ints, np.int64), count_all,
            cat(planes, np.uint64), cat(gidx, np.int64), group_arr, cdf, tab_off, noise,
            np.array([max(int(threads), 1), 1, 0, 0, 0, 0, 0], dtype=np.uint64))


def _noise_tables(count: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse-CDF tables (weight_noise.step_cdf(c, r)[:-1]) for the site counts that occur."""
    tab_off = np.full(TABLE_MAX + 1, -1, dtype=np.int64)
    pmf1 = site_pmf(r)
    if pmf1 is None:
        return np.zeros(0), tab_off, np.array([r, 0.0, 0.0, 0.0])
    need = set(np.unique(count[(count > 0) & (count <= TABLE_MAX)]).tolist())
    big = count[count > TABLE_MAX]
    if big.size:
        need.add(TABLE_MAX)
        need.update(int(c) for c in np.unique(big % TABLE_MAX) if c > 0)
    tables, off = [], 0
    pmf = np.array([1.0])
    for c in range(1, max(need, default=0) + 1):
        pmf = np.convolve(pmf, pmf1)
        if c in need:
            tables.append(np.cumsum(pmf)[:-1])
            tab_off[c] = off
            off += 2 * c
    cdf = np.concatenate(tables) if tables else np.zeros(0)
    return cdf, tab_off, np.array([r, pmf1[0], pmf1[2], 1.0])


# ---------------------------------------------------------------------- small compiled helpers
@intrinsic
def _popcount(typingctx, x):
    """Number of set bits of a uint64 (LLVM ctpop: one instruction on x86-64 with popcnt)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return sig, codegen


@numba.njit(**JIT_OPTIONS)
def draw_attachment(parent, s, anchor):
    """(u, sub): a uniform branch other than the anchor's (nodes but the root and the anchor); u is its
    end toward the anchor (pars_spr._attachment). pars_spr's first draw, so a copy of the state taken
    before the call tells which subtree it pruned."""
    n_nodes = parent.shape[0]
    root = root_of(parent)
    v = randint(s, n_nodes - 2)
    if v >= min(root, anchor):
        v += 1
    if v >= max(root, anchor):
        v += 1
    p = parent[v]
    z = anchor                                    # is v on the anchor's path to the root?
    while z >= 0 and z != v:
        z = parent[z]
    if z == v:
        return v, p
    return p, v


@numba.njit(**JIT_OPTIONS)
def _undirected(parent, kids, brlen, nb, nl):
    """nb[v] = v's neighbours (-1 padded), nl[v] the lengths of those edges (graph.undirected)."""
    for v in range(parent.shape[0]):
        j = 0
        for t in range(3):
            c = kids[v, t]
            if c >= 0:
                nb[v, j] = c
                nl[v, j] = brlen[c]
                j += 1
        if parent[v] >= 0:
            nb[v, j] = parent[v]
            nl[v, j] = brlen[v]
            j += 1
        while j < 3:
            nb[v, j] = -1
            nl[v, j] = 0.0
            j += 1


@numba.njit(**JIT_OPTIONS)
def _slot(nb, a, b):
    for j in range(3):
        if nb[a, j] == b:
            return j
    return -1


@numba.njit(**JIT_OPTIONS)
def _rooted(nb, start, order, rpar, at):
    """Breadth-first preorder of start's component into order[at:], each node's parent in rpar (start:
    -1); returns the number of nodes."""
    order[at] = start
    rpar[start] = -1
    head, end = at, at + 1
    while head < end:
        v = order[head]
        head += 1
        for j in range(3):
            w = nb[v, j]
            if w >= 0 and w != rpar[v]:
                rpar[w] = v
                order[end] = w
                end += 1
    return end - at


@numba.njit(**JIT_OPTIONS)
def _two_kids(nb, rpar, v):
    c1, c2 = -1, -1
    for j in range(3):
        w = nb[v, j]
        if w >= 0 and w != rpar[v]:
            if c1 < 0:
                c1 = w
            else:
                c2 = w
    return c1, c2


@numba.njit(**JIT_OPTIONS)
def _below(rpar, z, v):
    """Whether z is v or lies under v in the rooted order rpar (pars_spr._below)."""
    while z != v and z >= 0:
        z = rpar[z]
    return z == v


# ---------------------------------------------------------------------- Fitch parsimony on bit planes
# The kernels index with uint64 (numba then skips its negative-index wraparound, which keeps the word
# loops vectorised: about 3x faster than int64 indices).
_U0 = np.uint64(0)
_U1 = np.uint64(1)


@numba.njit(**JIT_OPTIONS)
def _part_shape(info, i):
    """(k planes, words, first column, first word) of partition i as uint64."""
    return np.uint64(info[i, 0]), np.uint64(info[i, 1]), np.uint64(info[i, 2]), np.uint64(info[i, 3])


@numba.njit(**JIT_OPTIONS)
def _down(sets, v, c1, c2, k, bs, bw, flag):
    """Downpass set of v from its children's, in a span (k planes of bw words, plane kk at kk * bs):
    the intersection, or the union where that is empty."""
    uv, u1, u2 = np.uint64(v), np.uint64(c1), np.uint64(c2)
    for w in range(bw):
        flag[w] = _U0
    for kk in range(k):
        base = kk * bs
        for w in range(bw):
            flag[w] |= sets[u1, base + w] & sets[u2, base + w]
    for kk in range(k):
        base = kk * bs
        for w in range(bw):
            x = sets[u1, base + w]
            y = sets[u2, base + w]
            both = x & y
            sets[uv, base + w] = both ^ (((x | y) ^ both) & ~flag[w])


@numba.njit(**JIT_OPTIONS)
def _final(sets, meets, v, p, c1, c2, sub, k, bs, bw, moff, fe, fs):
    """Final set of internal v from its downpass set, its children's and its parent's final set
    (parsimony.final_sets), written over v's downpass set (v's children still hold theirs), and
    meets[v] from word moff as _meets computes it (a span, as _down)."""
    uv, up_, u1, u2, us = np.uint64(v), np.uint64(p), np.uint64(c1), np.uint64(c2), np.uint64(sub)
    for w in range(bw):
        fe[w] = _U0
        fs[w] = _U0
        meets[uv, moff + w] = _U0
    for kk in range(k):
        base = kk * bs
        for w in range(bw):
            fe[w] |= sets[u1, base + w] & sets[u2, base + w]        # children's sets intersect
            fs[w] |= sets[up_, base + w] & ~sets[uv, base + w]      # up is not a subset of down
    for kk in range(k):
        base = kk * bs
        for w in range(bw):
            d1 = sets[u1, base + w]
            d2 = sets[u2, base + w]
            d = sets[uv, base + w]
            up = sets[up_, base + w]
            a = d | up
            b = d | (up & (d1 | d2))
            f = b ^ ((a ^ b) & ~fe[w])
            f = f ^ ((up ^ f) & ~fs[w])
            sets[uv, base + w] = f
            meets[uv, moff + w] |= f & sets[us, base + w]


@numba.njit(**JIT_OPTIONS)
def _meets(sets, meets, v, sub, k, bs, bw, moff):
    """meets[v] from word moff: the patterns where v's final set meets S's downpass set (a span)."""
    uv, us = np.uint64(v), np.uint64(sub)
    for w in range(bw):
        meets[uv, moff + w] = _U0
    for kk in range(k):
        base = kk * bs
        for w in range(bw):
            meets[uv, moff + w] |= sets[uv, base + w] & sets[us, base + w]


@numba.njit(**JIT_OPTIONS)
def _walk(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, k, nw, col, moff, w0, bw, sets, meets, fe, fs, kid):
    """Fitch sets and meets for the span of words w0 .. w0 + bw of a partition (k planes of nw words from
    tip column col; its meets from word moff): sets[node, kk * bw + w] is the span's scratch."""
    for idx in range(n_r + n_s):
        v = order[idx]
        if v < n_tips:
            for kk in range(k):
                src = col + kk * nw + w0
                for w in range(bw):
                    sets[v, kk * bw + w] = tip_planes[v, src + w]
    for idx in range(n_r + n_s - 1, 0, -1):        # R then S, children before parents
        v = order[idx]
        if v >= n_tips and idx != n_r:
            _down(sets, v, kid[v, 0], kid[v, 1], k, bw, bw, fe)
    if sub >= n_tips:
        _down(sets, sub, kid[sub, 0], kid[sub, 1], k, bw, bw, fe)
    _meets(sets, meets, order[0], sub, k, bw, bw, moff)
    for idx in range(1, n_r):                      # preorder: the parent's final set is ready
        v = order[idx]
        if v >= n_tips:
            _final(sets, meets, v, rpar[v], kid[v, 0], kid[v, 1], sub, k, bw, bw, moff, fe, fs)
        else:
            _meets(sets, meets, v, sub, k, bw, bw, moff)


@numba.njit(parallel=True, **JIT_OPTIONS)
def _walk_spans(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, k, nw, col, woff, wlo, whi, per, meets, kid):
    """_walk for words wlo .. whi - 1 in spans of `per` words on numba's threads, each with its own scratch
    (the spans' words are independent: every result is the same as one walk's)."""
    n_spans = (whi - wlo + per - _U1) // per
    for t in numba.prange(n_spans):
        w0 = wlo + np.uint64(t) * per
        bw = min(per, whi - w0)
        sets = np.empty((kid.shape[0], k * bw), dtype=np.uint64)
        flags = np.empty((2, bw), dtype=np.uint64)
        _walk(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, k, nw, col, woff + w0, w0, bw, sets, meets,
              flags[0], flags[1], kid)


@numba.njit(**JIT_OPTIONS)
def _fitch_meets(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, info, i, sets, meets, fe, fs, kid, threads,
                 wlo, whi):
    """Partition i, its words wlo .. whi - 1: Fitch downpass sets of R (rooted at order[0], the anchor) and
    S (rooted at sub), final sets of R, and for every node of R the words of patterns where its final set
    meets S's set; on up to `threads` (at most SPAN_MAX) threads, each with SPAN_WORK words x planes or more."""
    k, nw, col, woff = _part_shape(info, i)
    for idx in range(n_r + n_s):
        v = order[idx]
        if v >= n_tips:
            kid[v, 0], kid[v, 1] = _two_kids(nb, rpar, v)
    n_spans = min(threads, np.uint64(SPAN_MAX), ((whi - wlo) * k) // np.uint64(SPAN_WORK))
    if n_spans <= 1:
        _walk(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, k, nw, col, woff + wlo, wlo, whi - wlo, sets, meets,
              fe, fs, kid)
        return
    per = (whi - wlo + n_spans - _U1) // n_spans
    _walk_spans(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, k, nw, col, woff, wlo, whi, per, meets, kid)


@numba.njit(**JIT_OPTIONS)
def _factor(warp, v_t, k, rate):
    return -warp * math.log(1.0 / k - math.exp(-k / (k - 1.0) * v_t * rate) / k)


@numba.njit(**JIT_OPTIONS)
def _count_int(tally, order, rpar, n_r, meets, woff, nw, wp, n_bits, span, miss, wlo, whi):
    """tally[i] = the integer weight of the patterns in words wlo .. whi - 1 missed by candidate order[i]'s
    both ends, weights given as bit planes wp[b * nw + w], plane b nonzero only in words span[b, 0] ..
    span[b, 1] - 1."""
    uoff, unw = np.uint64(woff), np.uint64(nw)
    for i in range(1, n_r):
        y = np.uint64(order[i])
        x = np.uint64(rpar[order[i]])
        for w in range(wlo, whi):
            miss[w] = ~(meets[x, uoff + w] | meets[y, uoff + w])
        tot = _U0
        for b in range(np.uint64(n_bits)):
            cnt = _U0
            pb = b * unw
            for w in range(max(np.uint64(span[b, 0]), wlo), min(np.uint64(span[b, 1]), whi)):
                cnt += _popcount(miss[w] & wp[pb + w])
            tot += cnt << b
        tally[i] = tot


@numba.njit(**JIT_OPTIONS)
def _add_costs_int(cost, order, rpar, n_r, meets, woff, nw, wp, n_bits, span, factor, miss):
    """cost[i] += factor * (_count_int's count over all the partition's words)."""
    tally = np.empty(n_r, dtype=np.int64)
    _count_int(tally, order, rpar, n_r, meets, woff, nw, wp, n_bits, span, miss, _U0, np.uint64(nw))
    _add_tally(cost, n_r, tally, factor)


@numba.njit(**JIT_OPTIONS)
def _add_tally(cost, n_r, tally, factor):
    """cost[i] += factor * tally[i] (one partition's counts)."""
    for i in range(1, n_r):
        cost[i] += factor * float(tally[i])


@numba.njit(**JIT_OPTIONS)
def _plane_spans(wp, nw, n_bits, span):
    """span[b] = the first and one past the last nonzero word of weight plane b (the planes hold the
    patterns sorted by site count, so the high planes cover a short tail)."""
    for b in range(n_bits):
        lo, hi = nw, 0
        for w in range(nw):
            if wp[b * nw + w] != _U0:
                lo = min(lo, w)
                hi = w + 1
        span[b, 0], span[b, 1] = lo, max(lo, hi)


@numba.njit(**JIT_OPTIONS)
def _add_costs_float(cost, order, rpar, n_r, meets, woff, n_pat, wf, factor):
    """As _add_costs_int for real weights wf[j] (summed pattern by pattern)."""
    for i in range(1, n_r):
        y = order[i]
        x = rpar[y]
        tot = 0.0
        for j in range(n_pat):
            w = woff + (j >> 6)
            if ((meets[x, w] | meets[y, w]) >> np.uint64(j & 63)) & np.uint64(1) == 0:
                tot += wf[j]
        cost[i] += factor * tot


# ---------------------------------------------------------------------- weight noise
@numba.njit(**JIT_OPTIONS)
def _table_step(u, cdf, off, c):
    """(number of table values <= u) - c: searchsorted(step_cdf(c)[:-1], u, 'right') - c, searched
    outward from step 0."""
    g = c
    while g > 0 and cdf[off + g - 1] > u:
        g -= 1
    while g < 2 * c and cdf[off + g] <= u:
        g += 1
    return g - c


@numba.njit(**JIT_OPTIONS)
def _noise_mode(r, noise):
    """(draw?, use tables?, P(-1), P(+1)) of one site's step for tuning r."""
    if not r > 0.0:
        return False, False, 0.0, 0.0
    if r == noise[0] and noise[3] > 0.0:
        return True, True, noise[1], noise[2]
    if r < 0.5:
        return True, False, r, r
    p = min(r, 1.0)
    return True, False, 1.0 - p, p


@numba.njit(**JIT_OPTIONS)
def _perturb(s, i, info, count, gidx, groups, cdf, tab_off, tables, p_minus, p_plus, ev_j, ev_step):
    """Draw partition i's weight changes (every site of a pattern adds -1 w.p. p_minus and +1 w.p.
    p_plus, weight_noise.WeightNoise): the non-zero ones go to ev_j (position in the partition) and
    ev_step; returns how many.

    With the tables: patterns of c <= TABLE_MAX sites draw their summed step from its exact
    distribution; in a group of equal c where the step is mostly 0, only the patterns with a non-zero
    step are visited (geometric gaps between them, then the step drawn given that it is not 0); larger
    patterns draw TABLE_MAX-site chunks. Without (another r than the tables'): one uniform per site.
    (The caller applies the changes: a call per change with arrays would cost more than the draw.)"""
    poff, n_pat = info[i, 4], info[i, 5]
    n_ev = 0
    if not tables:
        for j in range(n_pat):
            step = 0
            for _ in range(count[poff + j]):
                u = uniform(s)
                if u < p_minus:
                    step -= 1
                elif u >= 1.0 - p_plus:
                    step += 1
            ev_j[n_ev] = j
            ev_step[n_ev] = step
            n_ev += step != 0
        return n_ev
    for g in range(info[i, 9], info[i, 10]):
        c, start, end = groups[g, 0], groups[g, 1], groups[g, 2]
        if c > TABLE_MAX:
            for t in range(start, end):
                rest = c
                step = 0
                while rest > TABLE_MAX:
                    step += _table_step(uniform(s), cdf, tab_off[TABLE_MAX], TABLE_MAX)
                    rest -= TABLE_MAX
                if rest > 0:
                    step += _table_step(uniform(s), cdf, tab_off[rest], rest)
                ev_j[n_ev] = t - poff
                ev_step[n_ev] = step
                n_ev += step != 0
            continue
        off = tab_off[c]
        below = cdf[off + c - 1]                   # P(step < 0)
        p0 = cdf[off + c] - below                  # P(step = 0)
        if p0 < 0.65:                              # often non-zero: one uniform per pattern
            for t in range(start, end):
                step = _table_step(uniform(s), cdf, off, c)
                ev_j[n_ev] = t - poff
                ev_step[n_ev] = step
                n_ev += step != 0
            continue
        if not p0 < 1.0:                           # (r so small that no site ever changes)
            continue
        log_p0 = math.log(p0)
        t = start - 1
        while True:                                # the next non-zero step: P(gap >= m) = p0^m
            gap = math.log(uniform(s)) / log_p0
            if gap >= end - 1 - t:
                break
            t += int(gap) + 1
            x = uniform(s) * (1.0 - p0)            # a uniform outside the band of step 0
            step = _table_step(x if x < below else x + p0, cdf, off, c)
            ev_j[n_ev] = t - poff
            ev_step[n_ev] = step
            n_ev += step != 0
    return n_ev


# ---------------------------------------------------------------------- the costs of one pruning
@numba.njit(**JIT_OPTIONS)
def _weight_scratch(info):
    """Work arrays big enough for any partition: miss words, weight planes, real weights, and the
    weight changes (pattern, step)."""
    max_w, max_planes, max_pat = 1, 1, 1
    for i in range(info.shape[0]):
        max_w = max(max_w, info[i, 1])
        max_planes = max(max_planes, info[i, 1] * max(info[i, 7], 64))
        max_pat = max(max_pat, info[i, 5])
    ev = np.empty((2, max_pat), dtype=np.int64)
    return (np.empty(max_w, dtype=np.uint64), np.empty(max_planes, dtype=np.uint64), np.empty(max_pat),
            ev[0], ev[1])


@numba.njit(**JIT_OPTIONS)
def _load_weights(s, i, r, fixed_w, info, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off,
                  noise, wp, wf, ev_j, ev_step):
    """Partition i's weights for one proposal: perturbed at r from the data's (fixed_w empty) or the
    given fixed_w (by pattern); by position, as bit planes in wp (returns (True, n_bits)) when they are
    whole, else in wf."""
    nw, poff, n_pat = info[i, 1], info[i, 4], info[i, 5]
    if fixed_w.shape[0] > 0:                       # the given weights (tests): planes when whole
        top = 0
        for j in range(n_pat):
            w = fixed_w[poff + gidx[poff + j]]
            if not (w >= 0.0 and w == math.floor(w) and w < 2.0 ** 40):
                for jj in range(n_pat):
                    wf[jj] = fixed_w[poff + gidx[poff + jj]]
                return False, 0
            top = max(top, int(w))
        n_bits = 1
        while (top >> n_bits) > 0:
            n_bits += 1
        unw = np.uint64(nw)
        for t in range(n_bits * nw):
            wp[t] = _U0
        for j in range(n_pat):
            v = np.uint64(int(fixed_w[poff + gidx[poff + j]]))
            bit = _U1 << np.uint64(j & 63)
            for b in range(np.uint64(n_bits)):
                if (v >> b) & _U1:
                    wp[b * unw + np.uint64(j >> 6)] |= bit
        return True, n_bits
    integer = info[i, 8] != 0
    n_bits = info[i, 7]
    if integer:
        plane = info[i, 6]
        for t in range(n_bits * nw):
            wp[t] = base_planes[plane + t]
    else:
        for j in range(n_pat):
            wf[j] = base_w[poff + j]
    draw, tables, p_minus, p_plus = _noise_mode(r, noise)
    if not draw:
        return integer, n_bits
    n_ev = _perturb(s, i, info, count, gidx, groups, cdf, tab_off, tables, p_minus, p_plus, ev_j, ev_step)
    if integer:
        unw = np.uint64(nw)
        for e in range(n_ev):                      # flip the weight bits that change (mostly the lowest)
            j = ev_j[e]
            old = base_i[poff + j]
            diff = np.uint64(old ^ (old + ev_step[e]))
            bit = _U1 << np.uint64(j & 63)
            at = np.uint64(j >> 6)
            while diff != _U0:
                if diff & _U1:
                    wp[at] ^= bit
                diff >>= _U1
                at += unw
    else:
        for e in range(n_ev):
            wf[ev_j[e]] += ev_step[e]
    return integer, n_bits


@numba.njit(**JIT_OPTIONS)
def _candidate_costs(s, tuning, nb, order, rpar, n_r, n_s, sub, n_tips, cost, fixed_w, tip_planes, info,
                     part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads):
    """cost[i] for every candidate (rpar[order[i]], order[i]), i = 1 .. n_r - 1, with freshly perturbed
    weights (fixed_w empty) or the given per-pattern weights fixed_w (tests)."""
    for i in range(n_r):
        cost[i] = 0.0
    if info.shape[0] == 0:
        return
    n_words = 0
    for i in range(info.shape[0]):
        n_words += info[i, 1]
    sets = np.empty((nb.shape[0], tip_planes.shape[1]), dtype=np.uint64)
    meets = np.empty((nb.shape[0], n_words), dtype=np.uint64)
    kid = np.empty((nb.shape[0], 2), dtype=np.int32)
    miss, wp, wf, ev_j, ev_step = _weight_scratch(info)
    flags = np.empty((2, miss.shape[0]), dtype=np.uint64)
    span = np.zeros((64, 2), dtype=np.int64)
    split = _split_counts(threads, fixed_w, info)
    tally = np.zeros((info.shape[0], n_r), dtype=np.int64)
    for i in range(info.shape[0]):
        if info[i, 5] == 0:
            continue
        nw = np.uint64(info[i, 1])
        wlo, whi = _U0, nw
        if split:                                  # this rank's share of the words
            wlo = nw * threads[PASS_RANK] // threads[PASS_RANKS]
            whi = nw * (threads[PASS_RANK] + _U1) // threads[PASS_RANKS]
        _fitch_meets(nb, order, rpar, n_r, n_s, sub, n_tips, tip_planes, info, i, sets, meets, flags[0], flags[1],
                     kid, threads[PASS_THREADS], wlo, whi)
        integer, n_bits = _load_weights(s, i, tuning[1], fixed_w, info, base_w, base_i, count, base_planes,
                                        gidx, groups, cdf, tab_off, noise, wp, wf, ev_j, ev_step)
        factor = _factor(tuning[0], tuning[2], part_f[i, 0], part_f[i, 1])
        if integer:
            _plane_spans(wp, info[i, 1], n_bits, span)
            _count_int(tally[i], order, rpar, n_r, meets, info[i, 3], info[i, 1], wp, n_bits, span, miss, wlo, whi)
            if not split:
                _add_tally(cost, n_r, tally[i], factor)
        else:
            _add_costs_float(cost, order, rpar, n_r, meets, info[i, 3], info[i, 5], wf, factor)
    if split:
        total = np.empty_like(tally)
        got = call6(threads[PASS_FN], (tally.ctypes.data, total.ctypes.data, tally.size, threads[PASS_TYPE],
                                       threads[PASS_OP], threads[PASS_COMM]))
        if got != 0:
            raise RuntimeError("MPI_Allreduce failed in ParsSPR's split Fitch pass")
        for i in range(info.shape[0]):
            if info[i, 5] != 0:
                _add_tally(cost, n_r, total[i], _factor(tuning[0], tuning[2], part_f[i, 0], part_f[i, 1]))


@numba.njit(**JIT_OPTIONS)
def _split_counts(threads, fixed_w, info):
    """Whether this pass is split over a site-split group: several ranks, the data's perturbed weights,
    every partition's whole (integer counts sum exactly; real weights would sum in another order)."""
    if threads[PASS_RANKS] <= _U1 or fixed_w.shape[0] > 0:
        return False
    for i in range(info.shape[0]):
        if info[i, 5] != 0 and info[i, 8] == 0:
            return False
    return True


# ---------------------------------------------------------------------- choice and Hastings ratio
@numba.njit(**JIT_OPTIONS)
def log_sum_except(logw, lo, hi, skip):
    """log sum_{i in [lo, hi), i != skip} exp(logw[i]), also when every term underflows or one overflows
    (then the log-sum-exp) (pars_spr._log_sum)."""
    total = 0.0
    for i in range(lo, hi):
        if i != skip:
            total += math.exp(logw[i])
    if 0.0 < total < math.inf:
        return math.log(total)
    top = -math.inf
    for i in range(lo, hi):
        if i != skip and logw[i] > top:
            top = logw[i]
    acc = 0.0
    for i in range(lo, hi):
        if i != skip:
            acc += math.exp(logw[i] - top)
    return top + math.log(acc)


@numba.njit(**JIT_OPTIONS)
def choose_target(cost, n_r, joined, u01, logw, forth):
    """The regraft candidate drawn with weights exp(-cost) among 1 .. n_r - 1 but `joined` (u01: the
    uniform), and log P(back) - log P(forth) of that choice (pars_spr.ParsSPR.propose)."""
    cmin = math.inf
    for i in range(1, n_r):
        cmin = min(cmin, cost[i])
    total = 0.0
    for i in range(1, n_r):
        logw[i] = cmin - cost[i]
        forth[i] = 0.0 if i == joined else math.exp(logw[i])
        total += forth[i]
    if not total > 0.0:                            # every other target underflowed: renormalise
        top = -math.inf
        for i in range(1, n_r):
            if i != joined and logw[i] > top:
                top = logw[i]
        total = 0.0
        for i in range(1, n_r):
            logw[i] -= top
            forth[i] = 0.0 if i == joined else math.exp(logw[i])
            total += forth[i]
    target = u01 * total
    c = n_r - 1
    acc = 0.0
    for i in range(1, n_r):
        acc += forth[i]
        if acc > target:
            c = i
            break
    while forth[c] == 0.0:
        c -= 1
    log_h = (logw[joined] - log_sum_except(logw, 1, n_r, c)) - (logw[c] - math.log(total))
    return c, log_h


# ---------------------------------------------------------------------- the move
@numba.njit(**JIT_OPTIONS)
def _prune(parent, kids, brlen, n_tips, u, sub, anchor, nb, nl, order, rpar):
    """Undirected view with u pruned: a-b joined (length 0 for now), sub's edge to u removed; R in
    order[:n_r] from the anchor, S in order[n_r:n_r + n_s] from sub. Returns (a, b, la, lb, l_sub,
    n_r, n_s, joined) or a = -1 when u's other neighbours are both tips (abort)."""
    _undirected(parent, kids, brlen, nb, nl)
    a, b = -1, -1
    la, lb, l_sub = 0.0, 0.0, 0.0
    for j in range(3):
        w = nb[u, j]
        if w == sub:
            l_sub = nl[u, j]
        elif a < 0:
            a, la = w, nl[u, j]
        else:
            b, lb = w, nl[u, j]
    if a < n_tips and b < n_tips:
        return -1, -1, 0.0, 0.0, 0.0, 0, 0, 0
    j = _slot(nb, a, u)
    nb[a, j], nl[a, j] = b, 0.0
    j = _slot(nb, b, u)
    nb[b, j], nl[b, j] = a, 0.0
    nb[sub, _slot(nb, sub, u)] = -1
    n_r = _rooted(nb, anchor, order, rpar, 0)
    n_s = _rooted(nb, sub, order, rpar, n_r)
    joined = 0
    for i in range(1, n_r):
        y = order[i]
        if (y == a and rpar[y] == b) or (y == b and rpar[y] == a):
            joined = i
    return a, b, la, lb, l_sub, n_r, n_s, joined


@numba.njit(**JIT_OPTIONS)
def _rebuild(parent, kids, brlen, nb, nl, root, stack):
    """parent/kids/brlen from the undirected view, directed away from the (unchanged) root node."""
    parent[root] = -1
    brlen[root] = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        v = stack[top]
        k = 0
        for j in range(3):
            w = nb[v, j]
            if w >= 0 and w != parent[v]:
                parent[w] = v
                brlen[w] = nl[v, j]
                kids[v, k] = w
                k += 1
                stack[top] = w
                top += 1
        while k < 3:
            kids[v, k] = -1
            k += 1


@numba.njit(**JIT_OPTIONS)
def pars_spr(parent, kids, brlen, n_tips, s, tuning, lo, hi, anchor, tip_planes, info, part_f, base_w,
             base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads):
    """ParsSPR(Tau,V) in place; returns log Hastings (-inf: aborted, when the pruned node's two other
    neighbours are tips). tuning = (warp, r, v_t, lambda); lo, hi: branch-length limits; anchor: the
    tip R is rooted at; the rest: prepare_pars_data's arrays."""
    n_nodes = parent.shape[0]
    root = root_of(parent)
    u, sub = draw_attachment(parent, s, anchor)
    nb = np.empty((n_nodes, 3), dtype=np.int32)
    nl = np.empty((n_nodes, 3))
    order = np.empty(n_nodes, dtype=np.int32)
    rpar = np.empty(n_nodes, dtype=np.int32)
    a, b, la, lb, l_sub, n_r, n_s, joined = _prune(parent, kids, brlen, n_tips, u, sub, anchor, nb, nl,
                                                   order, rpar)
    if a < 0:
        return -math.inf
    work = np.empty((3, n_r))
    cost, logw, forth = work[0], work[1], work[2]
    _candidate_costs(s, tuning, nb, order, rpar, n_r, n_s, sub, n_tips, cost, base_w[:0], tip_planes,
                     info, part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads)
    c, log_h = choose_target(cost, n_r, joined, uniform(s), logw, forth)
    y = order[c]
    x = rpar[y]
    # _rewire: is the target on a's side of the joined branch a-b?
    if rpar[b] == a:
        near_a = not _below(rpar, x, b)
    else:
        near_a = _below(rpar, x, a)
    if near_a:
        near, far, l_near, l_far = a, b, la, lb
    else:
        near, far, l_near, l_far = b, a, lb, la
    if _below(rpar, near, y):
        x, y = y, x                                # x: the end of the target nearer the joined branch
    lam = tuning[3]
    new_far, lh = multiply(s, l_far, lam, lo, hi)
    log_h += lh
    nl[near, _slot(nb, near, far)] = new_far
    nl[far, _slot(nb, far, near)] = new_far
    jx = _slot(nb, x, y)
    jy = _slot(nb, y, x)
    l_xy = nl[x, jx]
    new_near, lh = multiply(s, l_near, lam, lo, hi)
    log_h += lh
    new_xy, lh = multiply(s, l_xy, lam, lo, hi)
    log_h += lh
    nb[x, jx], nl[x, jx] = u, new_near
    nb[y, jy], nl[y, jy] = u, new_xy
    nb[u, 0], nl[u, 0] = sub, l_sub
    nb[u, 1], nl[u, 1] = x, new_near
    nb[u, 2], nl[u, 2] = y, new_xy
    j = _slot(nb, sub, -1)
    nb[sub, j], nl[sub, j] = u, l_sub
    _rebuild(parent, kids, brlen, nb, nl, root, order)
    return log_h


@numba.njit(**JIT_OPTIONS)
def candidate_costs(parent, kids, brlen, n_tips, u, sub, anchor, tuning, weights, tip_planes, info,
                    part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads):
    """For tests: (xs, ys, costs) of every candidate branch (xs[i], ys[i]) (ys[i]'s parent in R rooted at
    the anchor) when u's subtree sub is pruned, with the per-pattern weights `weights` (all partitions
    concatenated; empty: perturbed from the data's as the move does). The tree is not changed."""
    n_nodes = parent.shape[0]
    nb = np.empty((n_nodes, 3), dtype=np.int32)
    nl = np.empty((n_nodes, 3))
    order = np.empty(n_nodes, dtype=np.int32)
    rpar = np.empty(n_nodes, dtype=np.int32)
    a, b, la, lb, l_sub, n_r, n_s, joined = _prune(parent, kids, brlen, n_tips, u, sub, anchor, nb, nl,
                                                   order, rpar)
    if a < 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    cost = np.empty(n_r)
    s = np.ones(4, dtype=np.uint64)
    _candidate_costs(s, tuning, nb, order, rpar, n_r, n_s, sub, n_tips, cost, weights, tip_planes, info,
                     part_f, base_w, base_i, count, base_planes, gidx, groups, cdf, tab_off, noise, threads)
    xs = np.empty(n_r - 1, np.int64)
    ys = np.empty(n_r - 1, np.int64)
    for i in range(1, n_r):
        ys[i - 1] = order[i]
        xs[i - 1] = rpar[order[i]]
    return xs, ys, cost[1:].copy()


@numba.njit(**JIT_OPTIONS)
def perturbed_weights(s, r, tip_planes, info, part_f, base_w, base_i, count, base_planes, gidx, groups, cdf,
                      tab_off, noise, threads):
    """For tests: one draw of every pattern's perturbed weight at r (all partitions), by the move's own
    code (integer partitions: read back from the weight bit planes)."""
    out = np.empty(base_w.shape[0])
    miss, wp, wf, ev_j, ev_step = _weight_scratch(info)
    for i in range(info.shape[0]):
        nw, poff, n_pat = info[i, 1], info[i, 4], info[i, 5]
        integer, n_bits = _load_weights(s, i, r, base_w[:0], info, base_w, base_i, count, base_planes, gidx,
                                        groups, cdf, tab_off, noise, wp, wf, ev_j, ev_step)
        for j in range(n_pat):
            if integer:
                v = 0
                for b in range(n_bits):
                    v += int((wp[b * nw + (j >> 6)] >> np.uint64(j & 63)) & _U1) << b
                out[poff + gidx[poff + j]] = v
            else:
                out[poff + gidx[poff + j]] = wf[j]
    return out
