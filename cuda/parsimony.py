"""ParsSPR's Fitch parsimony costs on the GPU (cuda/parsimony.cu): one launch per proposal.

The host turns the pruned tree (R rooted at the anchor tip, and the subtree S) into a small program of
node rows, uploads it with the perturbed integer weights in one copy (the kernel packs their bit planes),
and reads back one integer cost per regraft candidate: the same integers as
mbgpu.moves.bitplanes.missed_weights, so proposals do not change. A pattern set's tip planes are
uploaded once. pycuda is imported inside functions.
"""
from __future__ import annotations

import numpy as np

from mbgpu.tree_walks import rooted_children, rooted_order

BLOCK = 128


def tree_program(adj, anchor: int, s: int, n_tips: int, xs, ys, rooted=None) -> np.ndarray | None:
    """int32 rows: downpass (v, kid, kid) of R's and S's internal nodes, then final-pass (v, parent, kid,
    kid) of R's in preorder, then the candidates (x, y); None when a node is not binary (numpy path).
    `rooted`: R's rooted_children(adj, anchor) when the caller has it already."""
    order, parent, kids_of = rooted if rooted is not None else rooted_children(adj, anchor)
    s_order, s_parent = rooted_order(adj, s)
    down, up = [], []
    for v in order:                       # R's internal nodes in preorder
        if v >= n_tips:
            kids = kids_of[v]
            if len(kids) != 2:
                return None
            up += (v, parent[v], kids[0], kids[1])
    for v in reversed(order):
        if v >= n_tips:
            down += (v, *kids_of[v])
    for v in reversed(s_order):
        if v >= n_tips:
            kids = [w for w in adj[v] if w != s_parent[v]]
            if len(kids) != 2:
                return None
            down += (v, kids[0], kids[1])
    cand = [z for pair in zip(xs, ys) for z in pair]
    return np.array([len(down) // 3, len(up) // 4, len(xs)] + down + up + cand, dtype=np.int32)


class _PatternSet:
    """Device buffers of one pattern set: tip planes and scratch sized for any tree of n_tips."""

    def __init__(self, planes: np.ndarray, n_tips: int, n_patterns: int):
        import pycuda.driver as drv

        self.source = planes                       # kept alive: the cache is keyed by identity
        self.k, self.w = planes.shape[1], planes.shape[2]
        n_nodes = 2 * n_tips
        self.tips = drv.to_device(np.ascontiguousarray(planes, dtype=np.uint64))
        self.down = drv.mem_alloc(8 * n_nodes * self.k * self.w)
        self.fin = drv.mem_alloc(8 * n_nodes * self.k * self.w)
        self.inputs = drv.mem_alloc(4 * (3 + 9 * n_nodes + max(n_patterns, 1)))   # program, then weights
        self.cost = drv.mem_alloc(8 * n_nodes)


def segment(n_states: int) -> int:
    """Lanes per 64-pattern word: the state count rounded up to a power of two (2..32)."""
    seg = 2
    while seg < n_states:
        seg *= 2
    return seg


class GpuParsimony:
    """ParsSPR's costs on one device (an mbgpu.cuda.context.Device). With `asynchronous=True` (as the
    likelihood's flushes, mbgpu.cuda.async_io) each call runs on a stream of its own that does not wait
    for the likelihood flushes queued on the default stream (CU_STREAM_NON_BLOCKING), through page-locked
    buffers."""

    def __init__(self, device, *, asynchronous: bool = False):
        from .async_io import HostStaging

        self.device = device
        self._fns: dict[int, object] = {}
        self._sets: list[_PatternSet] = []
        self.staging = HostStaging() if asynchronous else None
        self._stream = None

    def _pattern_set(self, planes: np.ndarray, n_tips: int, n_patterns: int) -> _PatternSet:
        for ps in self._sets:
            if ps.source is planes:
                return ps
        ps = _PatternSet(planes, n_tips, n_patterns)
        self._sets.append(ps)
        return ps

    def _kernel(self, seg: int = 4):
        fn = self._fns.get(seg)
        if fn is None:
            from .compiler import load_module

            fn = self._fns[seg] = load_module(self.device, "parsimony.cu").get_function("pars_costs_%d" % seg)
            fn.prepare("PPPPiiPiiPiiiiiP")
        return fn

    def missed_weights(self, planes: np.ndarray, adj, anchor: int, s: int, xs, ys, w: np.ndarray,
                       n_tips: int, rooted=None) -> np.ndarray | None:
        """float64 [len(xs)]: per candidate (xs[j], ys[j]) the total integer weight `w` of the patterns where
        neither final set meets S's set (as bitplanes.missed_weights); None: use the numpy path."""
        prog = tree_program(adj, anchor, s, n_tips, xs, ys, rooted)
        top = int(w.max()) if w.size else 0
        if prog is None or top >= 2 ** 32 or planes.shape[1] > 32:
            return None
        n_down, n_up, n_cand = (int(x) for x in prog[:3])
        body = prog[3:]
        with self.device:
            ps = self._pattern_set(planes, n_tips, w.size)
            seg = segment(ps.k)
            base = int(ps.inputs)
            args = (ps.tips, ps.down, ps.fin, base, n_down, n_up, base + 4 * (3 * n_down + 4 * n_up), n_cand, s,
                    base + 4 * body.size, w.size, max(top.bit_length(), 1), n_tips, ps.k, ps.w, ps.cost)
            grid = ((ps.w * seg + BLOCK - 1) // BLOCK, 1)
            inputs = np.concatenate([body.view(np.uint32), w.astype(np.uint32)])
            run = self._run_async if self.staging is not None else self._run
            out = run(self._kernel(seg), grid, args, ps, inputs, n_cand)
        return out.astype(np.int64).astype(np.float64)

    @staticmethod
    def _run(fn, grid, args, ps: _PatternSet, inputs: np.ndarray, n_cand: int) -> np.ndarray:
        """Upload, launch and read back on the default stream (each copy waits for queued flushes)."""
        import pycuda.driver as drv

        drv.memcpy_htod(ps.inputs, inputs)
        drv.memset_d8(ps.cost, 0, 8 * n_cand)
        fn.prepared_call(grid, (BLOCK, 1, 1), *args)
        out = np.empty(n_cand, dtype=np.uint64)
        drv.memcpy_dtoh(out, ps.cost)
        return out

    def _run_async(self, fn, grid, args, ps: _PatternSet, inputs: np.ndarray, n_cand: int) -> np.ndarray:
        """The same on this object's non-blocking stream, through page-locked buffers; waits for it alone."""
        import pycuda.driver as drv

        if self._stream is None:
            self._stream = drv.Stream(flags=1)         # CU_STREAM_NON_BLOCKING
        stream = self._stream
        self.staging.upload("inputs", ps.inputs, inputs, stream)
        drv.memset_d8_async(ps.cost, 0, 8 * n_cand, stream)
        fn.prepared_async_call(grid, (BLOCK, 1, 1), stream, *args)
        out = self.staging.download("cost", ps.cost, 8 * n_cand, stream)
        stream.synchronize()                            # the buffers are free again when this returns
        return out.view(np.uint64).copy()
