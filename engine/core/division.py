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
from mbgpu.core.kernels import node_update, rescale, root_sites, site_logs
from mbgpu.likelihood.compiled_kernels import weighted_sum

CUR, PROP = 0, 1          # model rows: the chain's current model and a proposed one


class DivisionArrays:
    """One pattern set's buffers for every chain (pattern-innermost, mbgpu.core.kernels) and the arrays
    the compiled evaluation reads and writes. The data (compact tip states, ambiguous tips' vectors,
    pattern weights) come from the interpreted sampler's instance, whose own buffers are released."""

    def __init__(self, shared, lane_parts):
        b = host_buffers(shared.backend)
        # a backend holding a slice of the patterns (mbgpu.mpi.sitesplit) sums the group's partial lnLs
        self.sum_each = getattr(shared.backend, "sum_each", None)
        c, k, s, n_pat = len(lane_parts), b.spec.n_categories, b.spec.n_states, b.spec.n_patterns
        self.n_tips = n_tips = shared.layout.n_tips
        self.n_nodes = n = 2 * n_tips - 1
        self.n_part, self.n_mat, self.n_scale = 2 * (n - n_tips), 2 * n, 2 * (n - n_tips + 1)
        self.tip_x = tip_vectors(b)                  # every tip as a vector: one kernel for every node
        self.weights = b.pattern_weights
        self.compat = np.ascontiguousarray(b._invariant_site_compat())
        self.partials = np.zeros((c * self.n_part, k, s, n_pat))
        self.matrices = np.zeros((c * self.n_mat, k, s, s))
        self.scale = np.zeros((c * self.n_scale, n_pat))
        _release(b)
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
        # per chain: marks, node order, two (S, P) work blocks, site values, +I terms
        self.scratch = (np.zeros((c, n), dtype=np.uint8), np.zeros((c, n), dtype=np.int64),
                        np.zeros((c, 2, s, n_pat)), np.zeros((c, n_pat)), np.zeros((c, n_pat)))

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
        """Every chain with todo != 0: its proposal's log likelihood into lnl_p (tree: a
        mbgpu.core.trees.ChainTrees); chains on numba's threads when there are several and several chains
        have work (results do not depend on it: every chain's work is its own)."""
        many = numba.get_num_threads() > 1 and np.count_nonzero(self.todo) > 1
        (evaluate_parallel if many else evaluate_serial)(
            self.todo, tree.parent_p, tree.kids_p, tree.brlen_p, tree.parent, tree.brlen, self.bslot, self.mslot,
            self.bslot_p, self.mslot_p, self.n_tips, self.evals, self.evecs, self.einv, self.crates, self.cweights,
            self.freqs, self.pinvar, self.mult, self.partials, self.tip_x,
            self.matrices, self.scale, self.weights, self.compat, self.lnl_p, *self.scratch)
        if self.sum_each is not None:
            live = self.todo != 0
            self.lnl_p[live] = self.sum_each(self.lnl_p[live])

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

    def keep(self, accepted: np.ndarray) -> None:
        """After the decisions: accepted evaluated chains keep their proposal's slots, model and lnL."""
        keep_division(self.todo, accepted, self.bslot, self.mslot, self.bslot_p, self.mslot_p, self.lnl,
                      self.lnl_p, self.evals, self.evecs, self.einv, self.crates, self.cweights, self.freqs,
                      self.pinvar, self.mult)


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
                   weights, compat, lnl_p, marks, orders, works, sites, invs):
    """Chain c's proposal: flip and recompute what it changed; lnl_p[c] = its ln L. todo 1: the branches
    whose length changed get new matrices, the nodes above them and above nodes that changed parent
    get new partials; todo 2 (a new model, row PROP): every branch and node. The scratch arrays are
    chain c's rows, so chains may be evaluated on different threads."""
    n = parent_p.shape[1]
    n_states, n_patterns = partials.shape[2], partials.shape[3]
    n_part, n_mat, n_scale = 2 * (n - n_tips), 2 * n, 2 * (n - n_tips + 1)
    mark, order, work, site, inv = marks[c], orders[c], works[c], sites[c], invs[c]
    full = todo[c] == 2
    row = PROP if full else CUR
    par, kid, bl = parent_p[c], kids_p[c], brlen_p[c]
    mark[:] = 0
    root = -1
    for v in range(n):
        bslot_p[c, v] = bslot[c, v]
        mslot_p[c, v] = mslot[c, v]
    for v in range(n):
        p = par[v]
        if p < 0:
            root = v
            continue
        if full or bl[v] != brlen[c, v]:
            mslot_p[c, v] = 1 - mslot[c, v]
            transition_matrices(evals[c, row], evecs[c, row], einv[c, row], crates[c, row], bl[v] * mult[c, row],
                                matrices[2 * v + mslot_p[c, v] + c * n_mat])
            _mark_up(par, mark, p)
        if parent[c, v] != p:
            _mark_up(par, mark, p)
            _mark_up(par, mark, parent[c, v])
    if full:
        for v in range(n_tips, n):
            mark[v] = 1
    k = _postorder_marked(kid, root, mark, n_tips, order)
    for r in range(k):
        bslot_p[c, order[r]] = 1 - bslot[c, order[r]]
    slots = bslot_p[c]
    for r in range(k):
        v = order[r]
        u1, u2 = kid[v, 0], kid[v, 1]
        x1, xs1 = _vector(u1, slots, c, n_tips, n_part, partials, tip_x)
        x2, xs2 = _vector(u2, slots, c, n_tips, n_part, partials, tip_x)
        dest = partials[2 * (v - n_tips) + slots[v] + c * n_part]
        node_update(dest, x1, xs1, matrices[2 * u1 + mslot_p[c, u1] + c * n_mat], x2, xs2,
                    matrices[2 * u2 + mslot_p[c, u2] + c * n_mat], work)
        rescale(dest, scale[2 * (v - n_tips) + slots[v] + c * n_scale], site)
    cum = scale[2 * (n - n_tips) + c * n_scale]
    cum[:] = 0.0
    for v in range(n_tips, n):
        rowv = scale[2 * (v - n_tips) + slots[v] + c * n_scale]
        for p in range(n_patterns):
            cum[p] += rowv[p]
    third = kid[root, 2]
    xt, xst = _vector(third, slots, c, n_tips, n_part, partials, tip_x)
    root_sites(partials[2 * (root - n_tips) + slots[root] + c * n_part], xt, xst,
               matrices[2 * third + mslot_p[c, third] + c * n_mat], freqs[c, row], cweights[c, row], work, site)
    pv = pinvar[c, row]
    if pv > 0.0:
        f = freqs[c, row]
        for p in range(n_patterns):
            t = 0.0
            for i in range(n_states):
                t += compat[p, i] * f[i]
            inv[p] = t
    site_logs(site, cum, inv, pv, work[0, 0])
    lnl_p[c] = weighted_sum(weights, work[0, 0])


@numba.njit(**JIT_OPTIONS)
def evaluate_serial(todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, evals,
                    evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                    matrices, scale, weights, compat, lnl_p, marks, orders, works, sites, invs):
    """evaluate_chain for every chain with todo != 0, in turn."""
    for c in range(todo.shape[0]):
        if todo[c] != 0:
            evaluate_chain(c, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                           n_tips, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                           matrices, scale, weights, compat, lnl_p, marks, orders, works, sites, invs)


@numba.njit(parallel=True, **JIT_OPTIONS)
def evaluate_parallel(todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips,
                      evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x, matrices, scale,
                   weights, compat, lnl_p, marks, orders, works, sites, invs):
    """evaluate_serial with the chains spread over numba's threads (each chain's buffers are its own)."""
    for c in numba.prange(todo.shape[0]):
        if todo[c] != 0:
            evaluate_chain(c, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p,
                           n_tips, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, partials, tip_x,
                           matrices, scale, weights, compat, lnl_p, marks, orders, works, sites, invs)


@numba.njit(**JIT_OPTIONS)
def keep_division(todo, accepted, bslot, mslot, bslot_p, mslot_p, lnl, lnl_p, evals, evecs, einv, crates,
                  cweights, freqs, pinvar, mult):
    for c in range(todo.shape[0]):
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
