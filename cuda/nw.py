"""pycuda launcher of the Needleman-Wunsch kernels in nw.cu (single pairs with traceback, and batches).

Single pair: the (m+1) x (n+1) matrix is cut into NW_TH x NW_TW tiles computed one tile anti-diagonal per
launch; only tile border rows/columns stay in device memory (4 * (m*n/NW_TW + n*m/NW_TH) bytes, about
31 GB for 1M x 1M), and the traceback recomputes one tile at a time on the way back; when 2 bits per cell
fit (about 3.1 GB for 100k x 100k), the forward pass keeps every cell's direction and the traceback only
walks them. Batch: one warp per
pair. pycuda is imported inside functions so that importing this module never needs a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mbgpu.errors import DataError, DeviceError

NW_R = 8  # rows per lane of the compiled default (tiles of 32 * NW_R rows); 4 is the other variant
NW_TW = 256
NW_WPB = 4
PAD = 31
WALK_THREADS = 256  # threads of nw_walk_dirs (they load a tile's directions; one walks them)
SMALL_PAIR_CELLS = 4 * 10**10  # up to 200k x 200k: 128-column tiles (default_tile_width)
DIRS_MEMORY_FRACTION = 0.5  # trace="auto" keeps directions when they need at most this share of free memory
OP_INS, OP_DEL = 1, 2


@dataclass
class PairResult:
    """Score, ops (forward order; None for score-only) and timings in seconds (GPU events)."""

    score: int
    ops: np.ndarray | None = None
    timings: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PairPlan:
    """Tile counts and border array shapes for one m x n pair."""

    m: int
    n: int
    tw: int = NW_TW
    rows: int = NW_R

    @property
    def th(self) -> int:
        """Tile rows: 32 lanes x `rows` rows each."""
        return 32 * self.rows

    @property
    def n_i(self) -> int:
        return -(-self.m // self.th)

    @property
    def n_j(self) -> int:
        return -(-self.n // self.tw)

    @property
    def ldh(self) -> int:
        return self.n_j * self.tw + 1

    @property
    def ldv(self) -> int:
        return self.n_i * self.th + 1

    @property
    def border_bytes(self) -> int:
        return 4 * ((self.n_i + 1) * self.ldh + (self.n_j + 1) * self.ldv)

    @property
    def dirs_bytes(self) -> int:
        """Kept directions: per tile (tw + 31) steps x 32 lanes x 16 bits (nw_tiles_dirs)."""
        return 2 * self.n_i * self.n_j * (self.tw + 31) * 32


def sub_table(scores: np.ndarray) -> np.ndarray:
    """int8 [32, 32] substitution table with the padding code 31 scoring 0; refuses scores outside int8."""
    scores = np.asarray(scores)
    if scores.shape[0] > PAD or scores.min() < -128 or scores.max() > 127:
        raise DataError("the GPU kernels need at most %d letters and scores in -128..127 (got %d letters, "
                        "scores %d..%d); use --device cpu" % (PAD, scores.shape[0], scores.min(), scores.max()))
    table = np.zeros((32, 32), dtype=np.int8)
    table[:scores.shape[0], :scores.shape[1]] = scores
    return table


def _module(dev, tw: int, rows: int = NW_R):
    from .compiler import load_module

    defines = {} if tw == NW_TW else {"NW_TW": tw}
    if rows != NW_R:
        defines["NW_R"] = rows
    return load_module(dev, "nw.cu", defines)


def _check_memory(dev, need: int, what: str) -> None:
    import pycuda.driver as drv

    free, total = drv.mem_get_info()
    if need > free - (256 << 20):
        raise DeviceError("%s needs %.2f GB of device memory but GPU %d has %.2f GB free (of %.2f GB)"
                          % (what, need / 1e9, dev.index, free / 1e9, total / 1e9))


def _padded(codes: np.ndarray, length: int) -> np.ndarray:
    out = np.full(length, PAD, dtype=np.uint8)
    out[:len(codes)] = codes
    return out


def _borders(dev, mod, plan: PairPlan, gap: int):
    """Allocate and initialise the border arrays (hrow, vcol)."""
    import pycuda.driver as drv

    _check_memory(dev, plan.border_bytes + plan.m + plan.n + (1 << 20), "a %d x %d alignment" % (plan.m, plan.n))
    hrow = drv.mem_alloc(4 * (plan.n_i + 1) * plan.ldh)
    vcol = drv.mem_alloc(4 * (plan.n_j + 1) * plan.ldv)
    init = mod.get_function("nw_init_borders")
    init(hrow, vcol, np.int64(plan.ldh), np.int64(plan.ldv), np.int32(plan.n_i), np.int32(plan.n_j),
         np.int32(gap), block=(256, 1, 1), grid=(min(4096, -(-max(plan.ldh, plan.ldv) // 256)), 1))
    return hrow, vcol


def forward(mod, plan: PairPlan, bufs: dict, gap: int, nalpha: int, diagonals=None) -> None:
    """Launch the tile anti-diagonals (all, or the given subset for timing samples); with bufs["dirs"]
    the tiles also keep every cell's direction for nw_walk_dirs."""
    dirs = bufs.get("dirs")
    fn = mod.get_function("nw_tiles" if dirs is None else "nw_tiles_dirs")
    fn.prepare("PPPPPqqiiiiiiiP" + ("" if dirs is None else "Pi"))
    extra = () if dirs is None else (dirs, plan.n_j)
    n_i, n_j = plan.n_i, plan.n_j
    for d in (range(n_i + n_j - 1) if diagonals is None else diagonals):
        ti0, ti1 = max(0, d - n_j + 1), min(d, n_i - 1)
        count = ti1 - ti0 + 1
        fn.prepared_async_call((-(-count // NW_WPB), 1), (32 * NW_WPB, 1, 1), None, bufs["a"], bufs["b"],
                               bufs["sub"], bufs["hrow"], bufs["vcol"], plan.ldh, plan.ldv, d, ti0, count,
                               gap, nalpha, plan.m, plan.n, bufs["result"], *extra)


def _traceback(mod, plan: PairPlan, bufs: dict, gap: int, nalpha: int) -> np.ndarray:
    """Walk the kept directions (nw_walk_dirs) or recompute tiles from their borders (nw_traceback, one
    warp); return ops in forward order."""
    import pycuda.driver as drv

    ops_d = drv.mem_alloc(plan.m + plan.n)
    nops_d = drv.mem_alloc(8)
    state_d = drv.mem_alloc(8)
    if bufs.get("dirs") is not None:
        mod.get_function("nw_walk_dirs")(bufs["dirs"], np.int32(plan.n_j), np.int32(plan.m), np.int32(plan.n),
                                         ops_d, nops_d, state_d, block=(WALK_THREADS, 1, 1), grid=(1, 1))
    else:
        mod.get_function("nw_traceback")(bufs["a"], bufs["b"], bufs["sub"], bufs["hrow"], bufs["vcol"],
                                         np.int64(plan.ldh), np.int64(plan.ldv), np.int32(gap), np.int32(nalpha),
                                         np.int32(plan.m), np.int32(plan.n), ops_d, nops_d, state_d,
                                         block=(32, 1, 1), grid=(1, 1))
    nops, state = np.zeros(1, np.int64), np.zeros(2, np.int32)
    drv.memcpy_dtoh(nops, nops_d)
    drv.memcpy_dtoh(state, state_d)
    rev = np.zeros(int(nops[0]), np.uint8)
    if len(rev):
        drv.memcpy_dtoh(rev, ops_d)
    lead = np.concatenate([np.full(int(state[0]), OP_INS, np.uint8), np.full(int(state[1]), OP_DEL, np.uint8)])
    return np.concatenate([lead, rev[::-1]])


def _keep_directions(plan: PairPlan, trace: str) -> bool:
    """Whether the traceback walks kept directions ("dirs") rather than recomputing tiles ("borders");
    "auto" keeps them when they take at most DIRS_MEMORY_FRACTION of the free device memory."""
    if trace not in ("auto", "dirs", "borders"):
        raise ValueError("trace must be 'auto', 'dirs' or 'borders', not %r" % (trace,))
    if trace != "auto":
        return trace == "dirs"
    import pycuda.driver as drv

    free, _ = drv.mem_get_info()
    return plan.dirs_bytes + plan.border_bytes <= DIRS_MEMORY_FRACTION * free


def default_tile_width(m: int, n: int) -> int:
    """Tile columns for one pair: 128 up to SMALL_PAIR_CELLS cells, where the pass is bound by the tile
    wavefront's length (286 vs 266 GCUPS at 100k x 100k on an H200), else 256 (a third less border memory)."""
    return 128 if m * n <= SMALL_PAIR_CELLS else NW_TW


def align_pair(dev, a: np.ndarray, b: np.ndarray, scores: np.ndarray, gap: int, *, traceback: bool = True,
               tw: int | None = None, trace: str = "auto", rows: int = NW_R) -> PairResult:
    """Score (and with `traceback`, an optimal alignment) of codes `a` x `b` on device `dev`.

    `tw`: tile columns (a multiple of 32; default from the pair's size); `rows`: rows per lane (8 or 4).
    `trace` picks the traceback:
    "dirs" keeps 2 bits per cell in the forward pass and walks them, "borders" keeps only tile borders and
    recomputes tiles on the way back (any size), "auto" the first when it fits in memory. Both give the
    same alignment (the same tie-breaking on the same scores).
    """
    import pycuda.driver as drv

    tw = default_tile_width(len(a), len(b)) if tw is None else tw
    plan = PairPlan(len(a), len(b), tw, rows)
    with dev:
        mod = _module(dev, tw, rows)
        bufs = {"a": drv.to_device(_padded(a, plan.n_i * plan.th)), "b": drv.to_device(_padded(b, plan.n_j * tw)),
                "sub": drv.to_device(sub_table(scores)), "result": drv.mem_alloc(4)}
        bufs["hrow"], bufs["vcol"] = _borders(dev, mod, plan, gap)
        if traceback and _keep_directions(plan, trace):
            _check_memory(dev, plan.dirs_bytes, "the traceback directions of a %d x %d alignment" % (plan.m, plan.n))
            bufs["dirs"] = drv.mem_alloc(plan.dirs_bytes)
        ev = [drv.Event() for _ in range(3)]
        ev[0].record()
        forward(mod, plan, bufs, gap, scores.shape[0])
        ev[1].record()
        score = np.zeros(1, np.int32)
        drv.memcpy_dtoh(score, bufs["result"])
        ops = _traceback(mod, plan, bufs, gap, scores.shape[0]) if traceback else None
        ev[2].record()
        ev[2].synchronize()
        timings = {"forward_s": ev[0].time_till(ev[1]) / 1e3, "total_s": ev[0].time_till(ev[2]) / 1e3}
        for key in ("hrow", "vcol", "dirs"):
            if key in bufs:
                bufs[key].free()
    return PairResult(int(score[0]), ops, timings)


def batch_scores(dev, coded, scores: np.ndarray, gap: int, timings: dict | None = None) -> np.ndarray:
    """int64 scores of many pairs [(codes_a, codes_b), ...], one warp per pair (largest pairs first)."""
    import pycuda.driver as drv

    la = np.array([len(a) for a, _ in coded], np.int64)
    lb = np.array([len(b) for _, b in coded], np.int64)
    order = np.argsort(-(la * lb), kind="stable")
    a_cat = np.concatenate([coded[k][0] for k in order]).astype(np.uint8)
    b_cat = np.concatenate([coded[k][1] for k in order]).astype(np.uint8)
    a_off = np.concatenate([[0], np.cumsum(la[order])[:-1]]).astype(np.int64)
    b_off = np.concatenate([[0], np.cumsum(lb[order])[:-1]]).astype(np.int64)
    s_off = np.concatenate([[0], np.cumsum(lb[order] + 1)[:-1]]).astype(np.int64)
    npairs = len(coded)
    with dev:
        mod = _module(dev, NW_TW)
        _check_memory(dev, 4 * int((lb + 1).sum()) + len(a_cat) + len(b_cat), "the batch")
        scratch = drv.mem_alloc(4 * int((lb + 1).sum()))
        out = np.zeros(npairs, np.int32)
        out_d = drv.mem_alloc(4 * npairs)
        args = [drv.to_device(x) for x in (a_cat, a_off, la[order].astype(np.int32), b_cat, b_off,
                                            lb[order].astype(np.int32), sub_table(scores))]
        ev0, ev1 = drv.Event(), drv.Event()
        ev0.record()
        mod.get_function("nw_batch")(*args, scratch, drv.to_device(s_off), np.int32(npairs), np.int32(gap),
                                     np.int32(scores.shape[0]), out_d, block=(32 * NW_WPB, 1, 1),
                                     grid=(-(-npairs // NW_WPB), 1))
        ev1.record()
        ev1.synchronize()
        drv.memcpy_dtoh(out, out_d)
        if timings is not None:
            timings["kernel_s"] = ev0.time_till(ev1) / 1e3
        scratch.free()
    result = np.empty(npairs, np.int64)
    result[order] = out
    return result
