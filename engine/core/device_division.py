"""One pattern set's likelihood for every chain on a device backend (CUDA): DivisionArrays' twin whose
buffers live on the GPU.

Each generation the compiled `plan_flush` writes the work of every chain with a proposal into ONE int64
array in the layout of mbgpu.cuda.batch.PackedFlush (matrices to compute with their eigensystems,
each chain's partial operations child-first, scale sums, root calls); the backend copies it up once and
runs it in four launches (matrices, every chain's partials, scale sums, roots) whatever the trees'
depths, and hands back one log likelihood per chain. Slots flip as in
DivisionArrays (two per node, the chain's decision keeps or drops the flipped ones), indexed through the
interpreted sampler's lane layout (mbgpu.likelihood.batched.LaneLayout) of the same instance.
"""
from __future__ import annotations

import numba
import numpy as np

from mbgpu.core.division import CUR, PROP, ChainRows, mark_chain
from mbgpu.cuda.batch import ROOT_JOB_WIDTH, SCALE_JOB_WIDTH, SPAN_WIDTH, PackedFlush
from mbgpu.jit import JIT_OPTIONS


def device_backend(backend) -> bool:
    """Whether a backend takes packed flushes (CudaBackend, or a pattern-slice wrapper around one)."""
    return hasattr(backend, "launch_packed") and hasattr(backend, "batch_fetch")


class DeviceDivision(ChainRows):
    """One pattern set's device instance seen by the core: the chains' rows (ChainRows), their lanes in
    the instance, and the buffer the packed flush is written into."""

    compiled_flushes = True    # on a CUDA backend, flushes queued and collected by compiled code (core_flush)

    def __init__(self, shared, lane_parts):
        b, lay = shared.backend, shared.layout
        self.backend = b
        c, k, s = len(lane_parts), b.spec.n_categories, b.spec.n_states
        self.n_states, self.n_categories = s, k
        self.n_tips = lay.n_tips
        n = self.n_nodes = 2 * lay.n_tips - 1
        super().__init__(lane_parts, n, s, k)
        self.geometry = np.array([lay.n_part, lay.n_mat, lay.n_scale], dtype=np.int64)
        self.lanes = np.array([p.lane for p in lane_parts], dtype=np.int64)
        # per chain: marks, node order, changed branches, (matrices, ops, root)
        self.scratch = (np.zeros((c, n), dtype=np.uint8), np.zeros((c, n), dtype=np.int64),
                        np.zeros((c, n), dtype=np.int64), np.zeros((c, 3), dtype=np.int64))
        self.sizes = np.zeros(7, dtype=np.int64)
        self.blob = np.zeros(flush_capacity(c, n, lay.n_tips, s, k), dtype=np.int64)
        self.flushes = b.core_flushes(self.blob.size, c) if self.compiled_flushes and hasattr(b, "core_flushes") \
            else None

    def launch(self, tree, c0: int = 0, c1: int | None = None, tag: str = ""):
        """Queue the flush of chains c0..c1-1's proposals (those with todo != 0); a ticket for collect,
        None when none has work. Flushes with different tags may be in flight together."""
        c1 = self.todo.size if c1 is None else c1
        if not self.todo[c0:c1].any():
            return None
        mkv = None
        if self.unobserved_weight:               # coding=variable: the host's share, added at collect
            mkv = np.zeros(self.todo.size)
            self.add_mkv(tree, mkv)
        if self.flushes is not None:
            return (tag, self._queue(tree, c0, c1, tag), c0, c1, mkv)
        return None, self.backend.launch_packed(self.plan(tree, c0, c1), tag), c0, c1, mkv

    def _queue(self, tree, c0: int, c1: int, tag: str) -> tuple:
        """The flush of chains c0..c1-1 planned into the tag's page-locked blob and queued by compiled
        code (mbgpu.cuda.core_flush); (root calls, root blocks)."""
        blob, reals = self.flushes.blob(tag)
        total, n_eig, params_at = self._plan_into(tree, c0, c1, blob, reals)
        return self.flushes.launch(tag, self.sizes, total, n_eig, params_at)

    def collect(self, ticket) -> None:
        """Wait for a launched flush; its chains' log likelihoods into lnl_p."""
        if ticket is None:
            return
        tag, handle, c0, c1, mkv = ticket
        if tag is None:
            self.lnl_p[np.flatnonzero(self.todo[c0:c1]) + c0] = self.backend.batch_fetch(handle)
        else:
            self.flushes.collect(tag, *handle, self.todo, c0, c1, self.lnl_p)
        if mkv is not None:
            live = np.flatnonzero(self.todo[c0:c1]) + c0
            self.lnl_p[live] += mkv[live]

    def evaluate(self, tree) -> None:
        """Every chain with todo != 0: its proposal's log likelihood into lnl_p (one flush, waited for)."""
        self.collect(self.launch(tree))

    def plan(self, tree, c0: int = 0, c1: int | None = None) -> PackedFlush:
        """The packed flush of chains c0..c1-1's proposals (flips the proposals' slots)."""
        blob = self.blob
        total, n_eig, params_at = self._plan_into(tree, c0, self.todo.size if c1 is None else c1, blob,
                                                  blob.view(np.float64))
        sizes = self.sizes.tolist()
        reals = blob[sum(sizes):total].view(np.float64)
        params = reals[params_at:].reshape(sizes[5] // ROOT_JOB_WIDTH, self.n_states + self.n_categories + 2)
        return PackedFlush(blob[:total], sizes, sizes[0], params, int(params_at), int(n_eig), [], paired=True)

    def _plan_into(self, tree, c0: int, c1: int, blob: np.ndarray, reals: np.ndarray) -> tuple:
        """plan_flush of chains c0..c1-1 into blob (reals: its float64 view); (words, eigensystems,
        where the root parameters start among the reals)."""
        return plan_flush(c0, c1, self.todo, tree.parent_p, tree.kids_p, tree.brlen_p, tree.parent, tree.brlen,
                          self.bslot, self.mslot, self.bslot_p, self.mslot_p, self.n_tips, self.lanes, self.geometry,
                          self.evals, self.evecs, self.einv, self.crates, self.cweights, self.freqs, self.pinvar,
                          self.mult, *self.scratch, self.sizes, blob, reals)


def flush_capacity(n_chains: int, n_nodes: int, n_tips: int, n_states: int, n_categories: int) -> int:
    """int64 words of the largest flush: every chain with a new model (every branch and node)."""
    inner, branches = n_nodes - n_tips, n_nodes - 1
    ints = n_chains * (2 * branches + 7 * inner + SCALE_JOB_WIDTH + inner + ROOT_JOB_WIDTH + SPAN_WIDTH)
    reals = n_chains * (branches + n_states + 2 * n_states * n_states + 2 * n_categories + n_states + 2)
    return ints + reals


@numba.njit(**JIT_OPTIONS)
def plan_flush(c0, c1, todo, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p, mslot_p, n_tips, lanes,
               geometry, evals, evecs, einv, crates, cweights, freqs, pinvar, mult, marks, orders, mats, tally,
               sizes, blob, reals):
    """Write the packed flush of every chain c0 <= c < c1 with todo != 0 into blob (reals: the same memory
    as float64), its operations job by job (mbgpu.cuda.batch.PackedFlush). Returns (words used,
    eigensystems, where the root parameters start among the reals)."""
    n = parent_p.shape[1]
    n_mat = n_ops = n_jobs = n_eig = 0
    for c in range(c0, c1):
        if todo[c] == 0:
            continue
        m, q, root = mark_chain(c, todo[c] == 2, parent_p, kids_p, brlen_p, parent, brlen, bslot, mslot, bslot_p,
                                 mslot_p, n_tips, marks[c], orders[c], mats[c])
        tally[c, 0], tally[c, 1], tally[c, 2] = m, q, root
        n_mat += m
        n_ops += q
        n_jobs += 1
        if m > 0:
            n_eig += 1
    inner = n - n_tips
    sizes[0], sizes[1], sizes[2] = n_mat, n_mat, 7 * n_ops
    sizes[3], sizes[4], sizes[5], sizes[6] = 5 * n_jobs, n_jobs * inner, 4 * n_jobs, SPAN_WIDTH * n_jobs
    n_int = sizes.sum()
    _write_ops(c0, c1, todo, kids_p, bslot_p, mslot_p, n_tips, lanes, geometry, orders, tally, blob, 2 * n_mat,
               n_int - SPAN_WIDTH * n_jobs)
    s, k = evals.shape[2], crates.shape[2]
    params_at = n_mat + n_eig * (s + 2 * s * s + k)
    _write_models(c0, c1, todo, brlen_p, mslot_p, lanes, geometry, evals, evecs, einv, crates, mult, mats, tally, blob,
                  reals, n_mat, n_int, n_eig)
    _write_roots(c0, c1, todo, kids_p, bslot_p, mslot_p, n_tips, lanes, geometry, cweights, freqs, pinvar, tally, blob,
                 reals, 2 * n_mat + 7 * n_ops, n_int + params_at)
    return n_int + params_at + n_jobs * (s + k + 2), n_eig, params_at


@numba.njit(**JIT_OPTIONS)
def _buffer(v, slot, lane, n_tips, n_part):
    """mbgpu.likelihood.batched.LaneLayout.buffers for one node, compiled (tips are shared by lanes)."""
    return v if v < n_tips else n_tips + 2 * (v - n_tips) + slot + lane * n_part


@numba.njit(**JIT_OPTIONS)
def op_weight(u1, u2, n_tips):
    """An operation's share of a job's device work, in partial-vector passes: its output, and each child
    that is an internal node (a tip's compact states or one-category partials cost far less)."""
    return 1 + (u1 >= n_tips) + (u2 >= n_tips)


@numba.njit(**JIT_OPTIONS)
def _write_ops(c0, c1, todo, kids_p, bslot_p, mslot_p, n_tips, lanes, geometry, orders, tally, blob, at, spans):
    """The operation rows job by job (each chain's nodes child-first) and each job's (first op, count,
    weight): update_partials_jobs gives a job a share of the grid by weight."""
    n_part, n_mat, n_scale = geometry[0], geometry[1], geometry[2]
    w, j, first = at, 0, 0
    for c in range(c0, c1):
        if todo[c] == 0:
            continue
        kid, lane, bs, ms = kids_p[c], lanes[c], bslot_p[c], mslot_p[c]
        weight = 0
        for r in range(tally[c, 1]):
            v = orders[c, r]
            u1, u2 = kid[v, 0], kid[v, 1]
            weight += op_weight(u1, u2, n_tips)
            blob[w] = _buffer(v, bs[v], lane, n_tips, n_part)
            blob[w + 1] = 2 * (v - n_tips) + bs[v] + lane * n_scale
            blob[w + 2] = -1
            blob[w + 3] = _buffer(u1, bs[u1], lane, n_tips, n_part)
            blob[w + 4] = 2 * u1 + ms[u1] + lane * n_mat
            blob[w + 5] = _buffer(u2, bs[u2], lane, n_tips, n_part)
            blob[w + 6] = 2 * u2 + ms[u2] + lane * n_mat
            w += 7
        s = spans + SPAN_WIDTH * j
        blob[s], blob[s + 1], blob[s + 2] = first, tally[c, 1], max(weight, 1)
        first += tally[c, 1]
        j += 1


@numba.njit(**JIT_OPTIONS)
def _write_models(c0, c1, todo, brlen_p, mslot_p, lanes, geometry, evals, evecs, einv, crates, mult, mats, tally, blob,
                  reals, n_mat, n_int, n_eig):
    """Matrix indices with their eigensystem numbers, edge lengths, eigensystems and category rates."""
    s, k = evals.shape[2], crates.shape[2]
    width = s + 2 * s * s
    i, e = 0, 0
    for c in range(c0, c1):
        m = tally[c, 0]
        if todo[c] == 0 or m == 0:
            continue
        row = PROP if todo[c] == 2 else CUR
        lane = lanes[c]
        for r in range(m):
            v = mats[c, r]
            blob[i] = 2 * v + mslot_p[c, v] + lane * geometry[1]
            blob[n_mat + i] = e
            reals[n_int + i] = brlen_p[c, v] * mult[c, row]
            i += 1
        w = n_int + n_mat + e * width
        for a in range(s):
            reals[w + a] = evals[c, row, a]
            for b in range(s):
                reals[w + s + a * s + b] = evecs[c, row, a, b]
                reals[w + s + s * s + a * s + b] = einv[c, row, a, b]
        for a in range(k):
            reals[n_int + n_mat + n_eig * width + e * k + a] = crates[c, row, a]
        e += 1


@numba.njit(**JIT_OPTIONS)
def _write_roots(c0, c1, todo, kids_p, bslot_p, mslot_p, n_tips, lanes, geometry, cweights, freqs, pinvar, tally, blob,
                 reals, at, params):
    """Per chain with work: its scale job (sum of every node's current scale row), root job, root parameters."""
    n_part, n_mat, n_scale = geometry[0], geometry[1], geometry[2]
    n = kids_p.shape[1]
    s, k = freqs.shape[2], cweights.shape[2]
    inner = n - n_tips
    n_jobs = 0
    for c in range(c0, c1):
        if todo[c] != 0:
            n_jobs += 1
    flat, roots = at + 5 * n_jobs, at + 5 * n_jobs + n_jobs * inner
    j = 0
    for c in range(c0, c1):
        if todo[c] == 0:
            continue
        row = PROP if todo[c] == 2 else CUR
        lane, bs, ms, root = lanes[c], bslot_p[c], mslot_p[c], tally[c, 2]
        cum = 2 * inner + lane * n_scale
        blob[at + 5 * j], blob[at + 5 * j + 1], blob[at + 5 * j + 2] = cum, 1, j * inner
        blob[at + 5 * j + 3], blob[at + 5 * j + 4] = inner, 1
        for v in range(n_tips, n):
            blob[flat + j * inner + v - n_tips] = 2 * (v - n_tips) + bs[v] + lane * n_scale
        third = kids_p[c, root, 2]
        blob[roots + 4 * j] = _buffer(root, bs[root], lane, n_tips, n_part)
        blob[roots + 4 * j + 1] = cum
        blob[roots + 4 * j + 2] = _buffer(third, bs[third], lane, n_tips, n_part)
        blob[roots + 4 * j + 3] = 2 * third + ms[third] + lane * n_mat
        w = params + j * (s + k + 2)
        for a in range(s):
            reals[w + a] = freqs[c, row, a]
        for a in range(k):
            reals[w + s + a] = cweights[c, row, a]
        pv = pinvar[c, row]
        reals[w + s + k] = pv
        reals[w + s + k + 1] = np.log1p(-pv) if pv > 0.0 else 0.0
        j += 1
