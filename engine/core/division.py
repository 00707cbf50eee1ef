"""One pattern set's likelihood for every chain at once, compiled (mbgpu.core.kernels).

The core keeps its own buffers, patterns innermost, in blocks per chain: internal node v, slot s,
chain c has partials and scale row 2(v - n_tips) + s (+ c times the block), the branch above v matrix
2v + s; a chain's summed scale row follows its node rows. Per node and chain `bslot`/`mslot` say
which slot is current; a proposal writes the other slot of what it changes and the chain's decision
keeps or drops the flipped slots. `refresh` fills every chain's buffers for its current state.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.likelihood.host_buffers import HostBuffers
from mbgpu.likelihood.mkv import chain_corrections
from mbgpu.core.kernels import node_update, rescale, root_sites, weighted_lnl

CUR, PROP = 0, 1          # model rows: the chain's current model and a proposed one


class ChainRows:
    """What every view of a pattern set keeps per chain, wherever its buffers live (DivisionArrays here,
    mbgpu.core.device_division on a GPU): node slots current and proposed, the models (row CUR: current,
    PROP: proposed), log likelihoods and the work marks; and the calls that need no buffers."""

    def __init__(self, lane_parts, n_nodes: int, n_states: int, n_categories: int):
        c, n, s, k = len(lane_parts), n_nodes, n_states, n_categories
        self.bslot = np.zeros((c, n), dtype=np.int8)
        self.mslot = np.zeros((c, n), dtype=np.int8)
        self.bslot_p, self.mslot_p = self.bslot.copy(), self.mslot.copy()
        self.evals = np.zeros((c, 2, s))
        self.evecs = np.zeros((c, 2, s, s))
        self.einv = np.zeros((c, 2, s, s))
        self.crates = np.zeros((c, 2, k))
        self.cweights = np.zeros((c, 2, k))
        self.freqs = np.zeros((c, 2, s))
        self.pinvar = np.zeros((c, 2))
        self.mult = np.zeros((c, 2))
        for i, p in enumerate(lane_parts):
            self.set_model(i, CUR, p.model, p.mult)
        self.lnl = np.array([p.lnl for p in lane_parts], dtype=np.float64)
        self.lnl_p = self.lnl.copy()
        self.todo = np.zeros(c, dtype=np.int8)       # 0 nothing, 1 changed branches/topology, 2 all (new model)
        # coding=variable: the pattern weights' sum, which scales the Mkv correction (mbgpu.likelihood.mkv)
        first = lane_parts[0]
        self.unobserved_weight = float(np.sum(first.weights)) if first.coding_variable else 0.0

    def set_model(self, i: int, row: int, model, mult: float) -> None:
        """Chain i's model (a SubstitutionModel) and rate multiplier into row CUR or PROP."""
        e = model.eigen
        self.evals[i, row] = e.values
        self.evecs[i, row] = e.vectors
        self.einv[i, row] = e.inverse
        self.crates[i, row] = model.category_rates
        self.cweights[i, row] = model.category_weights
        self.freqs[i, row] = model.frequencies
        self.pinvar[i, row] = model.pinvar
        self.mult[i, row] = mult

    def evaluate(self, tree) -> None:
        raise NotImplementedError

    def add_mkv(self, tree, lnl) -> None:
        """coding=variable: each chain with todo != 0 gets its proposal's Mkv correction added to lnl."""
        if self.unobserved_weight:
            chain_corrections(0, self.todo.size, self.todo, self.n_tips, tree.parent_p, tree.brlen_p, self.crates,
                              self.cweights, self.pinvar, self.mult, self.unobserved_weight, lnl)

    def launch(self, tree, c0: int = 0, c1: int | None = None, tag: str = ""):
        """Start the evaluations of chains c0..c1-1; a ticket for collect. Here (host buffers) every chain
        is computed at once, now: the core steps host divisions in one group."""
        assert c0 == 0 and (c1 is None or c1 == self.todo.size), "host divisions evaluate every chain at once"
        self.evaluate(tree)

    def collect(self, ticket) -> None:
        """Wait for a launch (nothing to wait for on the host)."""

    def refresh(self, tree) -> None:
        """Recompute every matrix and partial of every chain's current state with the core's own code
        (its proposal arrays must equal the current ones), keeping the log likelihoods as they are: the
        caches are then the same function of the state in a fresh run and in one continued from a
        checkpoint, whatever code filled the buffers before, so continued runs stay byte-identical."""
        for row in (self.evals, self.evecs, self.einv, self.crates, self.cweights, self.freqs, self.pinvar,
                    self.mult):
            row[:, PROP] = row[:, CUR]
        kept = self.lnl.copy()
        self.todo[:] = 2
        self.evaluate(tree)
        self.keep(np.ones(self.todo.size, dtype=np.bool_))
        self.lnl[:] = kept
        self.todo[:] = 0

    def keep(self, accepted: np.ndarray, c0: int = 0, c1: int | None = None) -> None:
        """After the decisions of chains c0..c1-1: the accepted evaluated ones keep their proposal's
        slots, model and lnL."""
        keep_division(c0, self.todo.size if c1 is None else c1, self.todo, accepted, self.bslot, self.mslot,
                      self.bslot_p, self.mslot_p, self.lnl, self.lnl_p, self.evals, self.evecs, self.einv,
                      self.crates, self.cweights, self.freqs, self.pinvar, self.mult)


class DivisionArrays(ChainRows):
    """One pattern set's buffers for every chain (pattern-innermost, mbgpu.core.kernels) and the arrays
    the compiled evaluation reads and writes. The data (compact tip states, ambiguous tips' vectors,
    pattern weights) come from the interpreted sampler's instance, whose own buffers are released."""

    def __init__(self, shared, lane_parts, dtype=None):
        """`dtype` of the partials and matrices: float64, or float32 in single precision (default: what
        the backend choice put on the host backend, HostBuffers.core_dtype)."""
        b = host_buffers(shared.backend)
        dtype = np.dtype(b.core_dtype if dtype is None else dtype)
        # a backend holding a slice of the patterns (mbgpu.mpi.sitesplit) sums the group's partial lnLs
        self.sum_each = getattr(shared.backend, "sum_each", None)
        c, k, s, n_pat = len(lane_parts), b.spec.n_categories, b.spec.n_states, b.spec.n_patterns
        self.n_tips = n_tips = shared.layout.n_tips
        self.n_nodes = n = 2 * n_tips - 1
        super().__init__(lane_parts, n, s, k)
        self.n_part, self.n_mat, self.n_scale = 2 * (n - n_tips), 2 * n, 2 * (n - n_tips + 1)
        self.tip_x = tip_vectors(b).astype(dtype)    # every tip as a vector: one kernel for every node
        self.weights = b.pattern_weights
        self.compat = np.ascontiguousarray(b._invariant_site_compat())
        self.partials = np.zeros((c * self.n_part, k, s, n_pat), dtype=dtype)
        self.matrices = np.zeros((c * self.n_mat, k, s, s), dtype=dtype)
        self.scale = np.zeros((c * self.n_scale, n_pat))
        self.scaled = np.zeros(c * self.n_scale, dtype=np.uint8)   # per scale row: 1 if not all zeros
        _release(b)
        # per chain: marks, node order + changed branches (_plan_chain), two (S, P) work blocks (float64:
        # the root's logarithms use them too), site values, +I terms and the frequencies they were
        # computed for
        self.scratch = (np.zeros((c, n), dtype=np.uint8), np.zeros((c, 2 * n), dtype=np.int64),
                        np.zeros((c, 2, s, n_pat)), np.zeros((c, n_pat)), np.zeros((c, n_pat)), np.full((c, s), -1.0))

    def evaluate(self, tree) -> None:
        """Every chain with todo != 0: its proposal's log likelihood into lnl_p (tree: a
        mbgpu.core.trees.ChainTrees); chains on numba's threads when there are several and several chains
        have work (results do not depend on it: every chain's work is its own)."""
        many = (numba.config.NUMBA_NUM_THREADS > 1 and np.count_nonzero(self.todo) > 1    # get_num_threads: ~7 us
                and numba.get_num_threads() > 1)
        (evaluate_parallel if many else evaluate_serial)(
            self.todo, tree.parent_p, tree.kids_p, tree.brlen_p, tree.parent, tree.brlen, self.bslot, self.mslot,
            self.bslot_p, self.mslot_p, self.n_tips, self.evals, self.evecs, self.einv, self.crates, self.cweights,
            self.freqs, self.pinvar, self.mult, self.partials, self.tip_x,
            self.matrices, self.scale, self.scaled, self.weights, self.compat, self.lnl_p, *self.scratch)
        if self.sum_each is not None:
            live = self.todo != 0
            self.lnl_p[live] = self.sum_each(self.lnl_p[live])
        self.add_mkv(tree, self.lnl_p)


def host_buffers(backend):
    """The HostBuffers holding a backend's arrays (the backend itself, or the one a pattern-slice
    wrapper holds), or None when its buffers are not in host memory."""
    inner = getattr(backend, "inner", backend)
    return inner if isinstance(inner, HostBuffers) else None


def _release(b) -> None:
    """Drop a host instance's partials, matrices and scale buffers once the core holds its own."""
    b.partials, b.matrices, b.scale = b.partials[:0], b.matrices[:0], b.scale[:0]


def tip_vectors(b) -> np.ndarray:
    """Every tip as a (1, S, P) vector: its partials, or one-hot / all-ones from its compact states."""
    n_tips, s, p = b.spec.n_tips, b.spec.n_states, b.spec.n_patterns
    out = np.empty((n_tips, 1, s, p))
    eye = np.vstack([np.eye(s), np.ones((1, s))])
    for t in range(n_tips):
        rows = b.tip_partials[t] if b.tip_partials[t] is not None else eye[b.tip_states[t]]
        out[t, 0] = rows.T
    return out


@numba.njit(**JIT_OPTIONS)
def transition_matrices(evals, evecs, einv, crates, t, out):
    """out[k] = V diag(exp(values t r_k)) V^-1, negatives clamped to 0 (EigenSystem.transition_matrices)."""
    n_cat, s = out.shape[0], evals.shape[0]
    if s == 4:
        _pmat4(evals, evecs, einv, crates, t, out)
        return
    e = np.empty(s)
    for k in range(n_cat):
        tk = t * crates[k]
        for m in range(s):
            e[m] = np.exp(tk * evals[m])
        for i in range(s):
            for j in range(s):
                x = 0.0
                for m in range(s):
                    x += evecs[i, m] * e[m] * einv[m, j]
                out[k, i, j] = x if x > 0.0 else 0.0


@numba.njit(**JIT_OPTIONS)
def _pmat4(evals, evecs, einv, crates, t, out):
    """transition_matrices for four states, unrolled: the same products and sums in the same order
    (the same bits), 2x faster (the four sums of a row no longer wait for each other)."""
    e00, e01, e02, e03, e10, e11, e12, e13 = (einv[0, 0], einv[0, 1], einv[0, 2], einv[0, 3], einv[1, 0], einv[1, 1],
                                              einv[1, 2], einv[1, 3])
    e20, e21, e22, e23, e30, e31, e32, e33 = (einv[2, 0], einv[2, 1], einv[2, 2], einv[2, 3], einv[3, 0], einv[3, 1],
                                              einv[3, 2], einv[3, 3])
    for k in range(out.shape[0]):
        tk = t * crates[k]
        x0, x1, x2, x3 = (np.exp(tk * evals[0]), np.exp(tk * evals[1]), np.exp(tk * evals[2]),
                          np.exp(tk * evals[3]))
        for i in range(4):
            w0, w1, w2, w3 = evecs[i, 0] * x0, evecs[i, 1] * x1, evecs[i, 2] * x2, evecs[i, 3] * x3
            a = 0.0 + w0 * e00 + w1 * e10 + w2 * e20 + w3 * e30
            b = 0.0 + w0 * e01 + w1 * e11 + w2 * e21 + w3 * e31
            c = 0.0 + w0 * e02 + w1 * e12 + w2 * e22 + w3 * e32
            d = 0.0 + w0 * e03 + w1 * e13 + w2 * e23 + w3 * e33
            out[k, i, 0] = a if a > 0.0 else 0.0
            out[k, i, 1] = b if b > 0.0 else 0.0
            out[k, i, 2] = c if c > 0.0 else 0.0
            out[k, i, 3] = d if d > 0.0 else 0.0


@numba.njit(**JIT_OPTIONS)
def _mark_up(parent, mark, u):
    while u >= 0 and mark[u] == 0:
        mark[u] = 1
        u = parent[u]


@numba.njit(**JIT_OPTIONS)
def _postorder_marked(kids, root, mark, n_tips, out):
    """The marked internal nodes, children before parents; returns their count."""
    stack = np.empty(2 * kids.shape[0], dtype=np.int64)
    done = np.zeros(kids.shape[0], dtype=np.uint8)
    top, n = 0, 0
    stack[0] = root
    top = 1
    while top > 0:
        v = stack[top - 1]
        if done[v] == 0:
            done[v] = 1
            for j in range(3):
                c = kids[v, j]
                if c >= n_tips and mark[c] != 0:
                    stack[top] = c
                    top += 1
        else:
            top -= 1
            out[n] = v
            n += 1
    return n


@numba.njit(**JIT_OPTIONS)
def _vector(v, slots, c, n_tips, n_part, partials, tip_x):
    """(vector array, category stride) of node v as a child, for chain c."""
    if v >= n_tips:
        return partials[2 * (v - n_tips) + slots[v] + c * n_part], 1
    return tip_x[v], 0


@numba.njit(**JIT_OPTIONS)
def evaluate_chain(c, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips,
                   evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x, matrices, scale,
                   scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of):
    """Chain c's proposal: flip and recompute what it changed; lnl_p[c] = its ln L. todo 1: the branches
    whose length changed get new matrices, the nodes above them and above nodes that changed parent
    get new partials; todo 2 (a new model, row PROP): every branch and node. The scratch arrays are
    chain c's rows, so chains may be evaluated on different threads."""
    n = parent_p.shape[1]
    n_part, n_mat, n_scale = 2 * (n - n_tips), 2 * n, 2 * (n - n_tips + 1)
    order, work, site = orders[c], works[c], sites[c]
    row = PROP if todo[c] == 2 else CUR
    kid = kids_p[c]
    root, k = _plan_chain(c, todo[c] == 2, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p,
                          mslot_p, n_tips, evals[c, row], evecs[c, row], einv[c, row], crates[c, row], mult[c, row],
                          matrices, marks[c], order)
    slots, mslots = bslot_p[c], mslot_p[c]
    for r in range(k):
        v = order[r]
        u1, u2 = kid[v, 0], kid[v, 1]
        x1, xs1 = _vector(u1, slots, c, n_tips, n_part, partials, tip_x)
        x2, xs2 = _vector(u2, slots, c, n_tips, n_part, partials, tip_x)
        dest = partials[2 * (v - n_tips) + slots[v] + c * n_part]
        need = node_update(dest, x1, xs1, matrices[2 * u1 + mslots[u1] + c * n_mat], x2, xs2,
                           matrices[2 * u2 + mslots[u2] + c * n_mat], work, site)
        srow = 2 * (v - n_tips) + slots[v] + c * n_scale
        scaled[srow] = rescale(dest, scale[srow], site) if need > 0 else 0
    cum = scale[2 * (n - n_tips) + c * n_scale]
    any_scaled = _summed_scale(c, slots, n_tips, n, scale, scaled, cum)
    third = kid[root, 2]
    xt, xst = _vector(third, slots, c, n_tips, n_part, partials, tip_x)
    root_sites(partials[2 * (root - n_tips) + slots[root] + c * n_part], xt, xst,
               matrices[2 * third + mslots[third] + c * n_mat], freqs[c, row], cweights[c, row], work, site)
    pv = pinvar[c, row]
    if pv > 0.0:
        _inv_terms(compat, freqs[c, row], invs[c], inv_of[c])
    lnl_p[c] = weighted_lnl(site, cum, any_scaled, invs[c], pv, weights, work)


@numba.njit(**JIT_OPTIONS)
def mark_chain(c, full, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, mark,
               order, mats):
    """Chain c's proposal: the other slot for the matrix of every changed branch (listed in `mats`) and
    for the partials of every node to recompute (marked, listed children first in `order`): those above a
    changed branch or a node that changed parent (the new root's old parent included); every branch and
    node when `full` (a new model).
    Returns (changed branches, nodes to recompute, root). The one home of this plan: host and device
    evaluations both start from it."""
    n = parent_p.shape[1]
    par, bl = parent_p[c], brlen_p[c]
    mark[:] = 0
    root, m = -1, 0
    for v in range(n):
        bslot_p[c, v] = bslot[c, v]
        mslot_p[c, v] = mslot[c, v]
    for v in range(n):
        p = par[v]
        if p < 0:
            root = v
            if parent[c, v] >= 0:        # a new root (a clock tree's unrooted view): its old parent lost it
                _mark_up(par, mark, parent[c, v])
            continue
        if full or bl[v] != brlen[c, v]:
            mslot_p[c, v] = 1 - mslot[c, v]
            mats[m] = v
            m += 1
            _mark_up(par, mark, p)
        if parent[c, v] != p:
            _mark_up(par, mark, p)
            _mark_up(par, mark, parent[c, v])
    if full:
        for v in range(n_tips, n):
            mark[v] = 1
    k = _postorder_marked(kids_p[c], root, mark, n_tips, order)
    for r in range(k):
        bslot_p[c, order[r]] = 1 - bslot[c, order[r]]
    return m, k, root


@numba.njit(**JIT_OPTIONS)
def _plan_chain(c, full, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, evals,
                evecs, einv, crates, mult, matrices, mark, order):
    """mark_chain, then the new matrices of the changed branches; `order` holds 2 x nodes entries (the
    node order, then the changed branches). Returns (root, nodes to recompute)."""
    n = parent_p.shape[1]
    n_mat = 2 * n
    m, k, root = mark_chain(c, full, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                            n_tips, mark, order[:n], order[n:])
    for r in range(m):
        v = order[n + r]
        transition_matrices(evals, evecs, einv, crates, brlen_p[c, v] * mult,
                            matrices[2 * v + mslot_p[c, v] + c * n_mat])
    return root, k


@numba.njit(**JIT_OPTIONS)
def _summed_scale(c, slots, n_tips, n, scale, scaled, cum):
    """cum = the sum of chain c's current scale rows, in node order, skipping the rows flagged all
    zeros (adding zeros changes nothing); returns whether any row was summed (else cum is stale)."""
    n_scale = 2 * (n - n_tips + 1)
    any_ = False
    for v in range(n_tips, n):
        r = 2 * (v - n_tips) + slots[v] + c * n_scale
        if scaled[r] == 0:
            continue
        rowv = scale[r]
        if not any_:
            cum[:] = rowv
            any_ = True
            continue
        for p in range(cum.shape[0]):
            cum[p] += rowv[p]
    return any_


@numba.njit(**JIT_OPTIONS)
def _inv_terms(compat, f, inv, inv_of):
    """inv[p] = sum_i compat[p, i] f_i: the +I term of pattern p, unless inv already holds them for
    these frequencies (inv_of)."""
    same = True
    for i in range(f.shape[0]):
        same = same and inv_of[i] == f[i]
        inv_of[i] = f[i]
    if same:
        return
    for p in range(inv.shape[0]):
        t = 0.0
        for i in range(compat.shape[1]):
            t += compat[p, i] * f[i]
        inv[p] = t


@numba.njit(**JIT_OPTIONS)
def evaluate_serial(todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, evals,
                    evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                    matrices, scale, scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of):
    """evaluate_chain for every chain with todo != 0, in turn."""
    evaluate_range(0, todo.shape[0], todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                   n_tips, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x, matrices, scale,
                   scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of)


@numba.njit(**JIT_OPTIONS)
def evaluate_range(c0, c1, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips,
                   evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                   matrices, scale, scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of):
    """evaluate_chain for the chains c0 <= c < c1 with todo != 0, in turn (other chains are not read)."""
    for c in range(c0, c1):
        if todo[c] != 0:
            evaluate_chain(c, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                           n_tips, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                           matrices, scale, scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of)


@numba.njit(**JIT_OPTIONS)
def evaluate_chains(c0, c1, todo, unobserved, args):
    """A block's evaluation of chains c0 <= c < c1, as DivisionArrays.evaluate: evaluate_range(c0, c1, todo,
    *args), then coding=variable's correction where `unobserved` (the pattern weights' sum) is not 0."""
    evaluate_range(c0, c1, todo, *args)
    if unobserved != 0.0:          # args: DivisionArrays' evaluation arrays in evaluate_range's order
        chain_corrections(c0, c1, todo, args[9], args[0], args[2], args[13], args[14], args[16], args[17], unobserved,
                          args[25])


@numba.njit(parallel=True, **JIT_OPTIONS)
def evaluate_parallel(todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips,
                      evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x, matrices, scale,
                      scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of):
    """evaluate_serial with the chains spread over numba's threads (each chain's buffers are its own)."""
    for c in numba.prange(todo.shape[0]):
        if todo[c] != 0:
            evaluate_chain(c, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                           n_tips, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                           matrices, scale, scaled, weights, compat, lnl_p, marks, orders, works, sites, invs, inv_of)


@numba.njit(**JIT_OPTIONS)
def keep_division(c0, c1, todo, accepted, bslot, mslot, bslot_p, mslot_p, lnl, lnl_p, evals, evecs, einv, crates,
                  cweights, freqs, pinvar, mult):
    for c in range(c0, c1):
        if todo[c] == 0 or not accepted[c]:
            continue
        bslot[c, :] = bslot_p[c, :]
        mslot[c, :] = mslot_p[c, :]
        lnl[c] = lnl_p[c]
        if todo[c] == 2:
            evals[c, CUR] = evals[c, PROP]
            evecs[c, CUR] = evecs[c, PROP]
            einv[c, CUR] = einv[c, PROP]
            crates[c, CUR] = crates[c, PROP]
            cweights[c, CUR] = cweights[c, PROP]
            freqs[c, CUR] = freqs[c, PROP]
            pinvar[c, CUR] = pinvar[c, PROP]
            mult[c, CUR] = mult[c, PROP]
