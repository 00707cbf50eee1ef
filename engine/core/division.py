"""One division's likelihood for every chain at once: compiled pruning into the lanes of a shared
host-memory instance (mbgpu.likelihood.batched.SharedInstance over a HostBuffers backend).

The core reuses the buffers the interpreted sampler built and filled (same LaneLayout index
arithmetic), so its caches start as that sampler left them. Per node and chain it keeps which of
the two slots holds the current partials/scale (`bslot`) and matrix (`mslot`); a proposal writes the
other slot of what it changes, as mbgpu.sampler.batch_step.LanePartition does, and the chain's
decision keeps or drops the flipped slots.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.jit import JIT_OPTIONS
from mbgpu.likelihood.host_buffers import HostBuffers
from mbgpu.likelihood.compiled_kernels import add_scales, site_log_likelihoods, update_partials_serial, weighted_sum

CUR, PROP = 0, 1          # model rows: the chain's current model and a proposed one


class DivisionArrays:
    """The arrays of one pattern set that the compiled evaluation reads and writes."""

    def __init__(self, shared, lane_parts):
        b = host_buffers(shared.backend)
        # a backend holding a slice of the patterns (mbgpu.mpi.sitesplit) sums the group's partial lnLs
        self.sum_each = getattr(shared.backend, "sum_each", None)
        lay = shared.layout
        self.n_tips, self.n_nodes = lay.n_tips, lay.n_nodes
        self.n_part, self.n_mat, self.n_scale = lay.n_part, lay.n_mat, lay.n_scale
        slot, packed = b._tips() if hasattr(b, "_tips") else _packed_tips(b)
        self.partials, self.tip_states, self.tip_slot, self.packed = b.partials, b.tip_states, slot, packed
        self.matrices, self.scale, self.weights = b.matrices, b.scale, b.pattern_weights
        self.compat = np.ascontiguousarray(b._invariant_site_compat())
        self.block = int(getattr(b, "block", 1 << 30))
        c = len(lane_parts)
        k, s = b.spec.n_categories, b.spec.n_states
        self.lanes = np.array([p.lane for p in lane_parts], dtype=np.int64)
        self.bslot = np.zeros((c, self.n_nodes), dtype=np.int8)
        self.mslot = np.zeros((c, self.n_nodes), dtype=np.int8)
        for i, p in enumerate(lane_parts):
            v = np.arange(self.n_nodes)
            base = np.asarray(p._buf0)
            self.bslot[i] = np.where(v < self.n_tips, 0, np.asarray(p._buf) - base)
            self.mslot[i] = np.asarray(p._mat) - np.asarray(p._mat0)
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
        """Every chain with todo != 0: its proposal's log likelihood into lnl_p (tree: a mbgpu.core.trees.ChainTrees)."""
        evaluate_division(self.todo, tree.parent_p, tree.kids_p, tree.brlen_p, tree.parent, tree.brlen,
                          self.bslot, self.mslot, self.bslot_p, self.mslot_p, self.lanes, self.n_tips,
                          self.n_part, self.n_mat, self.n_scale, self.evals, self.evecs, self.einv, self.crates,
                          self.cweights, self.freqs, self.pinvar, self.mult, self.partials, self.tip_states,
                          self.tip_slot, self.packed, self.matrices, self.scale, self.weights, self.compat,
                          self.block, self.lnl_p)
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


def _packed_tips(b):
    """(tip slot per tip, packed tip partials) for a HostBuffers backend without its own packing (numpy)."""
    rows = [tp for tp in b.tip_partials if tp is not None]
    slot = np.full(b.spec.n_tips, -1, dtype=np.int64)
    slot[[t for t, tp in enumerate(b.tip_partials) if tp is not None]] = np.arange(len(rows))
    shape = (1, b.spec.n_patterns, b.spec.n_states)
    packed = np.stack(rows)[:, None] if rows else np.zeros((1,) + shape)
    return slot, np.ascontiguousarray(packed)


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
def evaluate_division(todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, lanes,
                      n_tips, n_part, n_mat, n_scale, evals, evecs, einv, crates, cweights, freqs, pinvar, mult,
                      partials, tip_states, tip_slot, packed, matrices, scale, weights, compat, block, lnl_p):
    """For each chain with todo != 0: flip and recompute what its proposal changed; lnl_p[c] = its ln L.

    todo 1: the branches whose length changed get new matrices, the nodes above them and above nodes
    that changed parent get new partials; todo 2 (a new model, row PROP): every branch and node."""
    n_chains, n = parent_p.shape
    mark = np.zeros(n, dtype=np.uint8)
    order = np.empty(n, dtype=np.int64)
    ops = np.empty((n, 7), dtype=np.int64)
    internal = np.empty(n - n_tips, dtype=np.int64)
    site = np.empty(weights.shape[0])
    for c in range(n_chains):
        if todo[c] == 0:
            continue
        full = todo[c] == 2
        row = PROP if full else CUR
        lane = lanes[c]
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
                t = bl[v] * mult[c, row]
                transition_matrices(evals[c, row], evecs[c, row], einv[c, row], crates[c, row], t,
                                    matrices[2 * v + mslot_p[c, v] + lane * n_mat])
                _mark_up(par, mark, p)
            if parent[c, v] != p:
                _mark_up(par, mark, p)
                _mark_up(par, mark, parent[c, v])
        if full:
            for v in range(n_tips, n):
                mark[v] = 1
        k = _postorder_marked(kid, root, mark, n_tips, order)
        for r in range(k):
            v = order[r]
            bslot_p[c, v] = 1 - bslot[c, v]
        for r in range(k):
            v = order[r]
            ops[r, 0] = n_tips + 2 * (v - n_tips) + bslot_p[c, v] + lane * n_part
            ops[r, 1] = 2 * (v - n_tips) + bslot_p[c, v] + lane * n_scale
            ops[r, 2] = -1
            for j in range(2):
                u = kid[v, j]
                ops[r, 3 + 2 * j] = u if u < n_tips else n_tips + 2 * (u - n_tips) + bslot_p[c, u] + lane * n_part
                ops[r, 4 + 2 * j] = 2 * u + mslot_p[c, u] + lane * n_mat
        if k > 0:
            update_partials_serial(ops[:k], partials, tip_states, tip_slot, packed, matrices, scale, n_tips, block,
                                   True)
        cum = 2 * (n - n_tips) + lane * n_scale
        for v in range(n_tips, n):
            internal[v - n_tips] = 2 * (v - n_tips) + bslot_p[c, v] + lane * n_scale
        scale[cum, :] = 0.0
        add_scales(scale, cum, internal, 1.0)
        lnl_p[c] = _root_lnl(root, kid[root, 2], bslot_p[c], mslot_p[c], lane, n_tips, n_part, n_mat, partials,
                             tip_states, tip_slot, packed, matrices, freqs[c, row], cweights[c, row],
                             pinvar[c, row], scale[cum], compat, weights, site)


@numba.njit(**JIT_OPTIONS)
def _root_lnl(root, third, bslot, mslot, lane, n_tips, n_part, n_mat, partials, tip_states, tip_slot, packed,
              matrices, freqs, cweights, pinvar, scale_row, compat, weights, site):
    """The root's log likelihood: its partials (two children) times the third child's branch."""
    r = partials[2 * (root - n_tips) + bslot[root] + lane * n_part]
    matrix = matrices[2 * third + mslot[third] + lane * n_mat]
    if third >= n_tips:
        kind, states, x, xs = 2, tip_states[0], partials[2 * (third - n_tips) + bslot[third] + lane * n_part], 1
    elif tip_slot[third] < 0:
        kind, states, x, xs = 1, tip_states[third], r, 0
    else:
        kind, states, x, xs = 2, tip_states[third], packed[tip_slot[third]], 0
    site_log_likelihoods(r, kind, states, x, xs, matrix, freqs, cweights, pinvar, scale_row, True, compat, site)
    return weighted_sum(weights, site)


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
