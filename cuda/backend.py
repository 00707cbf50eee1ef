"""The CUDA likelihood backend: the protocol of mbgpu.likelihood.protocol on one GPU (pycuda).

A drop-in replacement for NumpyBackend with the same buffers and semantics (natural-log scale
buffers, dest_scale_read, the edge child of a trifurcating root), kept on the device: partials
float64[n_partials, C, P, S] (or float32 with precision='single'), matrices [n_matrices, C, S, S],
float64 scale buffers. Kernels come from likelihood_partials.cu, likelihood_root.cu and
likelihood_matrices.cu, compiled once per (states, categories, precision). Memory is planned before
allocating (mbgpu.cuda.memory_plan). `update_partials` runs one launch per dependency level of the
ops (many nodes and chains per launch); `update_transition_matrices_many` and `root_log_likelihoods`
are the batched forms of the per-chain calls. pycuda is imported inside functions only.
"""
from __future__ import annotations

import math

import numpy as np

from mbgpu.errors import DeviceError
from mbgpu.exact_sum import fsum_rows
from mbgpu.likelihood.protocol import NONE, InstanceSpec

from .async_io import HostStaging
from .batch import ROOT_JOB_WIDTH, SCALE_JOB_WIDTH, SPAN_WIDTH, pack_flush, root_job_arrays, schedule_levels, scale_job_arrays
from .memory_plan import check_fits, plan_instance, real_bytes

MAX_GRID_Y = 65535
PARTIAL_BLOCK_THREADS = 256
ROOT_BLOCK = 256
CHUNK = 1 << 30
WIDE_STATES = 12             # from this state count on, partials go through a shared output tile (WIDE)


JOB_CHUNK = 32                # operation rows the SIMT jobs kernel holds in shared memory at a time
MMA_WARPS = 8                 # warps per block on the tensor-core path (likelihood_mma.cuh)
MMA_SHARED_LIMIT = 96 * 1024  # fragment-order matrices in shared memory up to this (MMA_B_SHARED)


def kernel_defines(n_states: int, n_categories: int, precision: str, pattern_block: int | None = None,
                   min_blocks: int | None = None, mma: bool = False) -> dict:
    """The -D flags of one kernel variant (shared by the three likelihood sources). `mma`: wide state
    spaces on the fp64 tensor cores (sm_80+; likelihood_mma.cuh), 8-pattern warp tiles."""
    if mma:
        return {"STATES": n_states, "CATEGORIES": n_categories, "REAL": "double" if precision == "double" else "float",
                "PATTERN_BLOCK": 8 * MMA_WARPS, "MIN_BLOCKS": 2 if min_blocks is None else min_blocks,
                "WIDE_MMA": 1, "MMA_WARPS": MMA_WARPS,
                "MMA_B_SHARED": int(2 * mma_fragment_bytes(n_states, n_categories) <= MMA_SHARED_LIMIT)}
    if pattern_block is None:
        pattern_block = default_pattern_block(n_states, n_categories)
    if min_blocks is None:
        min_blocks = 2 if n_states >= WIDE_STATES and precision == "double" else 1
    return {"STATES": n_states, "CATEGORIES": n_categories, "REAL": "double" if precision == "double" else "float",
            "PATTERN_BLOCK": pattern_block, "MIN_BLOCKS": min_blocks}


def mma_fragment_bytes(n_states: int, n_categories: int) -> int:
    """Bytes of one matrix (all categories) in MMA fragment order (FRAG_MATRIX doubles)."""
    return n_categories * -(-n_states // 8) * -(-n_states // 4) * 32 * 8


def uses_mma(n_states: int, arch: str, precision: str = "double") -> bool:
    """Whether the partials of this state count go through the tensor cores on this device: wide state
    spaces in fp64 (protein: 90% of copy bandwidth against 76% for SIMT on an H100) and codon-sized
    ones in fp32 (36% against 31%); fp32 protein stays SIMT (84% against 68%). benchmarks/clp_kernels.py
    --paths measures both."""
    if n_states < WIDE_STATES or int(arch.split("_")[1]) < 80:
        return False
    return precision == "double" or n_states > 32


def default_pattern_block(n_states: int, n_categories: int) -> int:
    """Patterns per block: a multiple of 32, about 256 threads (block shapes measured on an H200)."""
    return max(32, (PARTIAL_BLOCK_THREADS // n_categories) // 32 * 32)


def sm_limits(device) -> dict:
    """A device's per-multiprocessor limits that decide how many blocks of a kernel are resident."""
    import pycuda.driver as drv

    a = drv.device_attribute
    get = device.get_attribute
    blocks = getattr(a, "MAX_BLOCKS_PER_MULTIPROCESSOR", None)
    reserved = getattr(a, "RESERVED_SHARED_MEMORY_PER_BLOCK", None)
    return {"registers": get(a.MAX_REGISTERS_PER_MULTIPROCESSOR), "threads": get(a.MAX_THREADS_PER_MULTIPROCESSOR),
            "shared": get(a.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR), "blocks": get(blocks) if blocks else 16,
            "reserved": get(reserved) if reserved else 0}


def resident_blocks(registers: int, threads: int, shared: int, limits: dict) -> int:
    """Blocks of a kernel that one multiprocessor holds at once (CUDA's occupancy rules: registers
    allocated per warp in units of 256, shared memory plus the per-block reservation, threads, blocks)."""
    warps = -(-threads // 32)
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    by_regs = limits["registers"] // (warps * per_warp)
    by_shared = limits["shared"] // (shared + limits["reserved"]) if shared + limits["reserved"] else limits["blocks"]
    return max(1, min(limits["blocks"], by_regs, by_shared, limits["threads"] // threads))


def matrix_stride(n_states: int, real: int) -> int:
    """Padded row length of a matrix in shared memory (MSTRIDE of likelihood.cuh)."""
    vw = 16 // real
    return ((n_states + 1 + vw - 1) // vw) * vw


class CudaBackend:
    """One likelihood instance on one GPU; see the module docstring and mbgpu.likelihood.protocol."""

    jobs_waves = 1      # the jobs kernel's grid in waves of resident blocks (one: no job waits for a wave)

    def __init__(self, spec: InstanceSpec, *, device=None, precision: str = "double",
                 pattern_block: int | None = None, min_blocks: int | None = None, chains: int = 1,
                 asynchronous: bool = False, mma: bool | None = None, tuning: dict | None = None):
        from .context import Device, open_device

        if spec.n_categories > 32 or spec.n_states > 64:
            raise DeviceError("the CUDA backend supports at most 32 rate categories and 64 states "
                              "(got %d and %d); use usebeagle=no" % (spec.n_categories, spec.n_states))
        self.spec = spec
        self.precision = precision
        self.real = real_bytes(precision)
        self.dtype = np.float64 if precision == "double" else np.float32
        self.dev = device if isinstance(device, Device) else open_device(device)
        self.chains = chains
        self.mma = uses_mma(spec.n_states, self.dev.arch, precision) if mma is None else bool(mma)
        self.defines = kernel_defines(spec.n_states, spec.n_categories, precision, pattern_block, min_blocks,
                                      self.mma)
        self.defines.update(tuning or {})                     # benchmarks: extra -D flags of the kernels
        self.pattern_block = self.defines["PATTERN_BLOCK"]   # patterns per block and tile step
        self.block = (32, MMA_WARPS, 1) if self.mma else (self.pattern_block, spec.n_categories, 1)
        self.tip_states = np.full((spec.n_tips, spec.n_patterns), spec.n_states, dtype=np.uint8)
        self.tip_partials: list[np.ndarray | None] = [None] * spec.n_tips
        self.category_rates = np.ones(spec.n_categories)
        self._tips_dirty = True
        self._compat_ready = False
        self._schedule_cache: dict = {}
        self._scratch: dict = {}
        self.staging = HostStaging() if asynchronous else None   # page-locked asynchronous flushes (async_io)
        self.blocks_per_sm = 16            # pattern tiles are spread over about this many blocks per SM
        with self.dev:
            self._load_kernels()
            self._allocate()

    # ------------------------------------------------------------------ setup
    def _load_kernels(self) -> None:
        import pycuda.driver as drv
        from pycuda._pvt_struct import pack     # what prepared_async_call packs arguments with

        self._pack = pack

        from .compiler import load_module

        self._modules = [load_module(self.dev, name, self.defines) for name in
                         ("likelihood_partials.cu", "likelihood_root.cu", "likelihood_matrices.cu")]
        self.k_partials = self._modules[0].get_function("update_partials")
        self.k_partials.prepare("PqqqPPPPPP")
        jobs = load_module(self.dev, "likelihood_partials.cu", dict(self.defines, COHERENT_LOADS=1, JOB_CHUNK=JOB_CHUNK))
        self._modules.append(jobs)
        self.k_jobs = jobs.get_function("update_partials_jobs")
        self.k_jobs.prepare("PPqqqPPPPPP")
        self.k_root = self._modules[1].get_function("root_lnl")
        self.k_root.prepare("PPqqPPPPPPPPPPPP")
        self.k_scale = self._modules[1].get_function("scale_jobs")
        self.k_scale.prepare("PqPP")
        self.k_matrices = self._modules[2].get_function("transition_matrices")
        self.k_matrices.prepare("qPPPPPP")
        s, c, r = self.spec.n_states, self.spec.n_categories, self.real
        self.mat_shared = c * s * matrix_stride(s, r) * r
        self.partials_shared = 2 * self.mat_shared + c * self.pattern_block * r
        if self.mma:                          # both children's matrices in fragment order, if they fit
            self.partials_shared = 2 * mma_fragment_bytes(s, c) if self.defines["MMA_B_SHARED"] else 16
        elif s >= WIDE_STATES:                # the output tile of the wide-row path (likelihood_partials.cu)
            self.partials_shared += c * self.pattern_block * (s + 1) * r
        self.jobs_shared = self.partials_shared
        if not self.mma:                      # two buffers of matrices and JOB_CHUNK rows (run_job_simt)
            self.jobs_shared = -(-(self.partials_shared + 2 * self.mat_shared) // 16) * 16 + JOB_CHUNK * 7 * 8
        for fn, size in ((self.k_partials, self.partials_shared), (self.k_jobs, self.jobs_shared),
                         (self.k_root, self.mat_shared)):
            if size > 48 * 1024:
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, size)
        self.n_sm = self.dev.device.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
        self.jobs_resident = resident_blocks(self.k_jobs.num_regs, self.block[0] * self.block[1],
                                             self.jobs_shared + self.k_jobs.shared_size_bytes, sm_limits(self.dev.device))

    def _allocate(self) -> None:
        import pycuda.driver as drv

        spec = self.spec
        plan = plan_instance(spec, self.precision)
        free, total = drv.mem_get_info()
        check_fits(plan, free, total, "GPU %d (%s)" % (self.dev.index, self.dev.device.name()), self.chains)
        c, p, s = spec.n_categories, spec.n_patterns, spec.n_states
        self.d_partials = self._zeros(self.real * spec.n_partials * c * p * s)
        self.d_matrices = self._zeros(self.real * spec.n_matrices * c * s * s)
        self.d_scale = self._zeros(8 * spec.n_scale_buffers * p)
        self.d_weights = self._zeros(8 * p)
        self.d_tip_states = self._zeros(spec.n_tips * p)
        self.d_tip_index = self._zeros(8 * spec.n_tips)
        self.d_tip_partials = None
        self.d_compat = None
        drv.memcpy_htod(self.d_weights, np.ones(p))

    def _zeros(self, nbytes: int):
        """A zero-filled device allocation (memset in chunks: sizes beyond 4 GiB are fine)."""
        import pycuda.driver as drv

        buf = drv.mem_alloc(max(int(nbytes), 16))
        base, left = int(buf), max(int(nbytes), 16)
        while left > 0:
            n = min(left, CHUNK)
            drv.memset_d8(base, 0, n)
            base, left = base + n, left - n
        return buf

    def _work(self, name: str, nbytes: int):
        """A reusable device work buffer of at least `nbytes` (grown on demand)."""
        import pycuda.driver as drv

        buf = self._scratch.get(name)
        if buf is None or buf[1] < nbytes:
            buf = (drv.mem_alloc(max(int(nbytes), 16)), max(int(nbytes), 16))
            self._scratch[name] = buf
        return buf[0]

    def _upload(self, name: str, array: np.ndarray):
        """Copy a host array into the work buffer `name`; returns the device pointer (int)."""
        import pycuda.driver as drv

        array = np.ascontiguousarray(array)
        buf = self._work(name, array.nbytes)
        if array.nbytes:
            drv.memcpy_htod(buf, array)
        return int(buf)

    # ------------------------------------------------------------------ data
    def set_tip_states(self, tip: int, states: np.ndarray) -> None:
        states = np.asarray(states)
        assert states.shape == (self.spec.n_patterns,)
        self.tip_states[tip] = np.minimum(states, self.spec.n_states).astype(np.uint8)
        self.tip_partials[tip] = None
        self._tips_dirty = True

    def set_tip_partials(self, tip: int, partials: np.ndarray) -> None:
        partials = np.asarray(partials, dtype=np.float64)
        assert partials.shape == (self.spec.n_patterns, self.spec.n_states)
        self.tip_partials[tip] = np.ascontiguousarray(partials)
        self._tips_dirty = True

    def set_pattern_weights(self, weights: np.ndarray) -> None:
        import pycuda.driver as drv

        w = np.ascontiguousarray(np.asarray(weights, dtype=np.float64))
        assert w.shape == (self.spec.n_patterns,)
        with self.dev:
            drv.memcpy_htod(self.d_weights, w)

    def set_category_rates(self, rates: np.ndarray) -> None:
        rates = np.asarray(rates, dtype=np.float64)
        assert rates.shape == (self.spec.n_categories,)
        self.category_rates = rates.copy()

    def _sync_tips(self) -> None:
        """Upload tip states, tip partials and the tip index after the tips changed (inside the context)."""
        import pycuda.driver as drv

        if not self._tips_dirty:
            return
        spec = self.spec
        drv.memcpy_htod(self.d_tip_states, np.ascontiguousarray(self.tip_states))
        with_partials = [t for t in range(spec.n_tips) if self.tip_partials[t] is not None]
        index = np.full(spec.n_tips, -1, dtype=np.int64)
        index[with_partials] = np.arange(len(with_partials))
        drv.memcpy_htod(self.d_tip_index, index)
        self.d_tip_partials = None
        if with_partials:
            free, total = drv.mem_get_info()
            plan = plan_instance(InstanceSpec(spec.n_tips, 0, spec.n_patterns, spec.n_states, 1, 0, 0),
                                 self.precision, tip_partial_tips=len(with_partials))
            check_fits(plan, free, total, "GPU %d" % self.dev.index, self.chains)
            self.d_tip_partials = drv.mem_alloc(self.real * len(with_partials) * spec.n_patterns * spec.n_states)
            for k, t in enumerate(with_partials):
                nbytes = self.real * spec.n_patterns * spec.n_states
                drv.memcpy_htod(int(self.d_tip_partials) + k * nbytes, self.tip_partials[t].astype(self.dtype))
        self._tips_dirty = False
        self._compat_ready = False

    def _tip_partials_ptr(self) -> int:
        return int(self.d_tip_partials) if self.d_tip_partials is not None else int(self.d_partials)

    # ------------------------------------------------------------------ matrices
    def update_transition_matrices(self, eigen, matrix_indices: np.ndarray, edge_lengths: np.ndarray) -> None:
        self.update_transition_matrices_many([(eigen, self.category_rates, matrix_indices, edge_lengths)])

    def update_transition_matrices_many(self, groups) -> None:
        """One launch for [(eigen, category_rates, matrix_indices, edge_lengths)] (e.g. one per chain)."""
        s, c = self.spec.n_states, self.spec.n_categories
        idx, lengths, eig_of, eigens, rates = [], [], [], [], []
        for e, (eigen, cat_rates, indices, edges) in enumerate(groups):
            ind = np.asarray(indices, dtype=np.int64).ravel()
            idx.append(ind)
            lengths.append(np.asarray(edges, dtype=np.float64).ravel())
            eig_of.append(np.full(ind.size, e, dtype=np.int64))
            eigens.append(np.concatenate([np.asarray(eigen.values, dtype=np.float64).ravel(),
                                          np.asarray(eigen.vectors, dtype=np.float64).ravel(),
                                          np.asarray(eigen.inverse, dtype=np.float64).ravel()]))
            rates.append(np.asarray(cat_rates, dtype=np.float64).ravel())
        n = int(sum(i.size for i in idx))
        if n == 0:
            return
        assert all(r.size == c for r in rates) and all(e.size == s + 2 * s * s for e in eigens)
        ints = np.concatenate(idx + eig_of)
        reals = np.concatenate(lengths + eigens + rates)
        n_e = len(groups)
        total = n * c * s * s
        with self.dev:
            d_ints = self._upload("mat_ints", ints)
            d_reals = self._upload("mat_reals", reals)
            grid = (int(min(-(-total // 256), 8 * self.n_sm * 8)), 1)
            self.k_matrices.prepared_call(grid, (256, 1, 1), n, d_ints, d_reals, d_ints + 8 * n,
                                          d_reals + 8 * n, d_reals + 8 * (n + n_e * (s + 2 * s * s)),
                                          self.d_matrices)

    def set_transition_matrices(self, matrix_indices: np.ndarray, matrices: np.ndarray) -> None:
        import pycuda.driver as drv

        s, c = self.spec.n_states, self.spec.n_categories
        mats = np.asarray(matrices, dtype=np.float64).reshape(-1, c, s, s).astype(self.dtype)
        per = self.real * c * s * s
        with self.dev:
            for k, m in enumerate(np.asarray(matrix_indices, dtype=np.int64).ravel().tolist()):
                drv.memcpy_htod(int(self.d_matrices) + m * per, np.ascontiguousarray(mats[k]))

    # ------------------------------------------------------------------ partials
    def _schedule(self, ops: np.ndarray) -> tuple[np.ndarray, list[int]]:
        """Levels of `ops`, cached by content (a sampler repeats the same few op arrays)."""
        key = ops.tobytes()
        hit = self._schedule_cache.get(key)
        if hit is None:
            if len(self._schedule_cache) > 256:
                self._schedule_cache.clear()
            hit = schedule_levels(ops)
            self._schedule_cache[key] = hit
        return hit

    def update_partials(self, ops: np.ndarray) -> None:
        ops = np.ascontiguousarray(np.asarray(ops, dtype=np.int64).reshape(-1, 7))
        if not len(ops):
            return
        spec = self.spec
        assert ops[:, 0].min() >= spec.n_tips and ops[:, 0].max() < spec.n_buffers, "bad dest in ops"
        assert not np.any((ops[:, 0] == ops[:, 3]) | (ops[:, 0] == ops[:, 5])), "dest equals a child"
        order, counts = self._schedule(ops)
        with self.dev:
            self._sync_tips()
            d_ops = self._upload("ops", ops[order])
            first = 0
            for count in counts:
                for start in range(first, first + count, MAX_GRID_Y):
                    self.launch_level(d_ops, start, min(MAX_GRID_Y, first + count - start))
                first += count

    def update_partials_levels(self, ops: np.ndarray, counts) -> None:
        """Operations already grouped by dependency level (`counts` rows per level, in order): one upload,
        one launch per level. The batched sampler knows the levels from the trees, so no scheduling here."""
        ops = np.ascontiguousarray(ops, dtype=np.int64)
        if not len(ops):
            return
        with self.dev:
            self._sync_tips()
            d_ops = self._upload("ops", ops)
            first = 0
            for count in counts:
                for start in range(first, first + count, MAX_GRID_Y):
                    self.launch_level(d_ops, start, min(MAX_GRID_Y, first + count - start))
                first += count

    def launch_level(self, d_ops, start: int, n: int, stream=None) -> None:
        """One launch of the n operations d_ops[start:start+n] (independent of each other)."""
        spec = self.spec
        n_tiles = -(-spec.n_patterns // self.pattern_block)
        gx = int(min(n_tiles, max(1, -(-self.blocks_per_sm * self.n_sm // n))))
        self._launch(self.k_partials, (gx, n), self.block, self.partials_shared, d_ops, start, spec.n_patterns,
                     spec.n_tips, self.d_partials, self._tip_partials_ptr(), self.d_tip_states, self.d_tip_index,
                     self.d_matrices, self.d_scale, stream=stream)

    def launch_jobs(self, d_ops, d_spans, n_jobs: int, stream=None) -> None:
        """One launch of every job's operations (update_partials_jobs): d_spans holds SPAN_WIDTH ints a
        job (first op, count, weight); the kernel gives each job a share of the grid by weight and each
        block walks its job's operations child-first over its own pattern tiles."""
        spec = self.spec
        n_tiles = -(-spec.n_patterns // self.pattern_block)
        grid = max(n_jobs, min(self.jobs_waves * self.jobs_resident * self.n_sm, n_jobs * n_tiles))
        self._launch(self.k_jobs, (int(grid), 1), self.block, self.jobs_shared, d_ops, d_spans, n_jobs,
                     spec.n_patterns, spec.n_tips, self.d_partials, self._tip_partials_ptr(), self.d_tip_states,
                     self.d_tip_index, self.d_matrices, self.d_scale, stream=stream)

    # ------------------------------------------------------------------ one generation, one copy
    def batch_launch(self, matrix_groups, ops: np.ndarray, counts, scale_jobs, root_calls, tag: str = ""):
        """A whole flush of the batched sampler: matrices [(eigen, rates, indices, lengths)], operations in
        level order (`counts` per level), scale jobs [(cumulative, reset, indices, sign)] and root calls.

        Everything is packed into ONE host-to-device copy first, then every launch is queued without
        waiting, so the host is free until `batch_fetch(handle)` reads the root sums (the generation's one
        device-to-host copy). `tag` keeps the buffers of flushes in flight at the same time apart.
        """
        s, c = self.spec.n_states, self.spec.n_categories
        return self.launch_packed(pack_flush(matrix_groups, ops, scale_jobs, root_calls, s, c, counts), tag)

    def launch_packed(self, flush, tag: str = ""):
        """batch_launch of a flush already packed (mbgpu.cuda.batch.PackedFlush, the layout pack_flush
        writes; the compiled sampler core writes it directly): the copy up and every launch, queued.
        Host time per flush is what bounds a GPU generation on mid-sized data, so this path keeps to
        Python integers and raw launches (about 12 us a launch on the H100 host's Xeon)."""
        sizes, n_mat = flush.sizes, flush.n_mat
        p = self.spec.n_patterns
        with self.dev:
            self._sync_tips()
            compat = self._compat_pointer(flush.params)
            at, addr = [], self._stage(flush.blob, tag)
            for n in sizes:                                   # byte addresses of the int sections, then reals
                at.append(addr)
                addr += 8 * n
            real0 = addr
            if n_mat:
                self._launch_matrices(n_mat, flush.n_eig, at, real0)
            if sizes[6]:
                self.launch_jobs(at[2], at[6], sizes[6] // SPAN_WIDTH)
            first = 0
            for count in flush.counts:
                for start in range(first, first + count, MAX_GRID_Y):
                    self.launch_level(at[2], start, min(MAX_GRID_Y, first + count - start))
                first += count
            n_scale_jobs, n_roots = sizes[3] // SCALE_JOB_WIDTH, sizes[5] // ROOT_JOB_WIDTH
            fused = flush.paired and n_scale_jobs == n_roots      # the root kernel sums the scale rows
            if n_scale_jobs and not fused:
                self._launch(self.k_scale, (min(-(-p // 256), 4 * self.n_sm), n_scale_jobs), (256, 1, 1), 0,
                             self.d_scale, p, at[3], at[4])
            gx = min(-(-p // ROOT_BLOCK), 1024)
            d_sums = self._work("root_sums" + tag, 16 * gx * n_roots)
            self._launch(self.k_root, (gx, n_roots), (ROOT_BLOCK, 1, 1), self.mat_shared, at[5],
                         real0 + 8 * flush.params_at, p, self.spec.n_tips, self.d_partials, self._tip_partials_ptr(),
                         self.d_tip_states, self.d_tip_index, self.d_matrices, self.d_scale, compat, self.d_weights,
                         0, d_sums, at[3] if fused else 0, at[4] if fused else 0)
            if self.staging is not None:              # the sums come back right behind this flush's root kernel
                out = self.staging.download("sums" + tag, d_sums, 16 * gx * n_roots)
                self.staging.record(tag)
                return (d_sums, n_roots, gx, (tag, out))
        return (d_sums, n_roots, gx)

    def core_cubins(self) -> tuple[str, str, str]:
        """The cubin files of the jobs, root and matrices kernels as _load_kernels loads them (cached)."""
        from .compiler import build_cubin

        arch = self.dev.arch
        return (str(build_cubin("likelihood_partials.cu", dict(self.defines, COHERENT_LOADS=1, JOB_CHUNK=JOB_CHUNK),
                                arch)),
                str(build_cubin("likelihood_root.cu", dict(self.defines), arch)),
                str(build_cubin("likelihood_matrices.cu", dict(self.defines), arch)))

    def page_locked(self, n: int, dtype) -> np.ndarray:
        """A page-locked host array of n items (asynchronous copies read and write it; inside the context)."""
        import pycuda.driver as drv

        return drv.pagelocked_empty(int(n), dtype)

    def core_flushes(self, capacity: int, max_roots: int):
        """The compiled core's flush path on this backend (mbgpu.cuda.core_flush.CoreFlushes): flushes of
        at most `capacity` int64 words and `max_roots` root calls, queued and collected by compiled code."""
        from .core_flush import CoreFlushes

        return CoreFlushes(self, capacity, max_roots)

    def _stage(self, blob: np.ndarray, tag: str) -> int:
        """Copy a flush up (page-locked and asynchronous when the backend is); its device address."""
        if self.staging is None:
            return self._upload("batch" + tag, blob)
        self.staging.wait(tag)                        # the previous flush of this tag is done with its buffers
        base = int(self._work("batch" + tag, blob.nbytes))
        self.staging.upload("batch" + tag, base, blob)
        return base

    def _compat_pointer(self, params: np.ndarray) -> int:
        """The invariant-site table's address when a root call has pinvar > 0 (or the table exists), else 0."""
        if self._compat_ready:
            return int(self.d_compat)
        return self._invariant_site_table() if any(v > 0.0 for v in params[:, -2].tolist()) else 0

    def _launch_matrices(self, n_mat: int, n_eig: int, at: list, real0: int) -> None:
        s, c = self.spec.n_states, self.spec.n_categories
        grid = (min(-(-(n_mat * c * s * s) // 256), 8 * self.n_sm * 8), 1)
        self._launch(self.k_matrices, grid, (256, 1, 1), 0, n_mat, at[0], real0, at[1], real0 + 8 * n_mat,
                     real0 + 8 * (n_mat + n_eig * (s + 2 * s * s)), self.d_matrices)

    def _launch(self, func, grid, block, shared: int, *args, stream=None) -> None:
        """One asynchronous launch of a prepared kernel: pycuda's prepared_async_call without its
        per-call import, block-shape call and texture loop (pycuda's own launch entry point)."""
        func._launch_kernel(grid, block, self._pack(func.arg_format, *args), shared, stream)

    def batch_fetch(self, handle) -> list[float]:
        """The root log likelihoods of a batch_launch (waits for its launches: one small copy; with
        an asynchronous backend for this flush's event only)."""
        import pycuda.driver as drv

        d_sums, n_calls, gx = handle[:3]
        with self.dev:
            if len(handle) > 3:
                tag, out = handle[3]
                self.staging.wait(tag)
                sums = out.view(np.float64).reshape(n_calls, gx, 2)
            else:
                sums = np.empty((n_calls, gx, 2))
                drv.memcpy_dtoh(sums, d_sums)
        return compensated_totals(sums)

    # ------------------------------------------------------------------ scaling
    def reset_scale(self, cumulative: int) -> None:
        self.scale_jobs([(cumulative, True, [], 1)])

    def accumulate_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        if np.asarray(scale_indices).size:
            self.scale_jobs([(cumulative, False, scale_indices, 1)])

    def remove_scale(self, cumulative: int, scale_indices: np.ndarray) -> None:
        if np.asarray(scale_indices).size:
            self.scale_jobs([(cumulative, False, scale_indices, -1)])

    def scale_jobs(self, jobs) -> None:
        """One launch for [(cumulative, reset, indices, sign)]: cumulative = (0 if reset) +/- sum."""
        if not jobs:
            return
        table, flat = scale_job_arrays(jobs)
        p = self.spec.n_patterns
        with self.dev:
            d_table = self._upload("scale_jobs", table)
            d_idx = self._upload("scale_idx", flat)
            grid = (int(min(-(-p // 256), 4 * self.n_sm)), len(jobs))
            self.k_scale.prepared_call(grid, (256, 1, 1), self.d_scale, p, d_table, d_idx)

    # ------------------------------------------------------------------ root
    def _invariant_site_table(self) -> int:
        """Device pointer of prod over tips of the tip vectors, float64[P, S] (for +I), built on demand."""
        import pycuda.driver as drv

        if not self._compat_ready:
            s = self.spec.n_states
            eye = np.vstack([np.eye(s), np.ones((1, s))])
            compat = np.ones((self.spec.n_patterns, s))
            for tip in range(self.spec.n_tips):
                tp = self.tip_partials[tip]
                compat *= eye[self.tip_states[tip]] if tp is None else tp
            if self.d_compat is None:
                self.d_compat = drv.mem_alloc(compat.nbytes)
            drv.memcpy_htod(self.d_compat, compat)
            self._compat_ready = True
        return int(self.d_compat)

    def _roots(self, calls, want_sites: bool) -> tuple[list[float], np.ndarray | None]:
        """Run root calls in one launch; per call the compensated total (and the site values)."""
        import pycuda.driver as drv

        spec = self.spec
        p = spec.n_patterns
        jobs, params = root_job_arrays(calls, spec.n_states, spec.n_categories)
        gx = int(min(-(-p // ROOT_BLOCK), 1024))
        with self.dev:
            self._sync_tips()
            compat = self._compat_pointer(params)
            d_jobs = self._upload("root_jobs", jobs)
            d_params = self._upload("root_params", params)
            d_sites = int(self._work("sites", 8 * p * len(calls))) if want_sites else 0
            d_sums = self._work("root_sums", 16 * gx * len(calls))
            self.k_root.prepared_call((gx, len(calls)), (ROOT_BLOCK, 1, 1), d_jobs, d_params, p, spec.n_tips,
                                      self.d_partials, self._tip_partials_ptr(), self.d_tip_states,
                                      self.d_tip_index, self.d_matrices, self.d_scale, compat, self.d_weights,
                                      d_sites, d_sums, 0, 0, shared_size=self.mat_shared)
            sums = np.empty((len(calls), gx, 2))
            drv.memcpy_dtoh(sums, d_sums)
            sites = None
            if want_sites:
                sites = np.empty((len(calls), p))
                drv.memcpy_dtoh(sites, d_sites)
        return compensated_totals(sums), sites

    def site_log_likelihoods(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                             cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> np.ndarray:
        call = (root, freqs, weights, pinvar, cumulative_scale, child, child_matrix)
        return self._roots([call], True)[1][0]

    def root_log_likelihood(self, root: int, freqs: np.ndarray, weights: np.ndarray, pinvar: float,
                            cumulative_scale: int, child: int = NONE, child_matrix: int = NONE) -> float:
        call = (root, freqs, weights, pinvar, cumulative_scale, child, child_matrix)
        return self._roots([call], False)[0][0]

    def root_log_likelihoods(self, calls) -> list[float]:
        """Batched root_log_likelihood: [(root, freqs, weights, pinvar, cumulative, child, child_matrix)]."""
        return self._roots(list(calls), False)[0]

    # ------------------------------------------------------------------ inspection (tests)
    def partials_of(self, buffer: int) -> np.ndarray:
        """A copy of one partial buffer (C, P, S) as float64."""
        import pycuda.driver as drv

        c, p, s = self.spec.n_categories, self.spec.n_patterns, self.spec.n_states
        out = np.empty((c, p, s), dtype=self.dtype)
        with self.dev:
            drv.memcpy_dtoh(out, int(self.d_partials) + (buffer - self.spec.n_tips) * out.nbytes)
        return out.astype(np.float64)

    def scale_of(self, index: int) -> np.ndarray:
        """A copy of one scale buffer (P,)."""
        import pycuda.driver as drv

        out = np.empty(self.spec.n_patterns)
        with self.dev:
            drv.memcpy_dtoh(out, int(self.d_scale) + index * out.nbytes)
        return out

    def synchronize(self) -> None:
        """Wait for every queued launch (benchmarks)."""
        import pycuda.driver as drv

        with self.dev:
            drv.Context.synchronize()


def compensated_totals(sums: np.ndarray) -> list[float]:
    """Per root call, math.fsum of the root kernel's per-block (sum, compensation) pairs, sums
    float64[calls, blocks, 2] (a plain sum of a call whose sums are not finite): compiled
    (mbgpu.exact_sum, the same bits) when all are finite, as they are but for a broken proposal."""
    flat = sums.reshape(sums.shape[0], -1)
    if np.isfinite(flat).all():
        return fsum_rows(np.ascontiguousarray(flat)).tolist()
    return [math.fsum(row) if np.isfinite(s).all() else float(s.sum())
            for row, s in zip(flat.tolist(), sums[:, :, 0])]


def backend_factory(*, device=None, precision: str = "double", asynchronous: bool = False, devices=None,
                    memory_limit: int | None = None):
    """A factory InstanceSpec -> CudaBackend sharing one opened device (for PartitionLikelihood).

    `device`: a Device or a device index (None: device 0); `asynchronous`: page-locked asynchronous
    flushes (mbgpu.cuda.async_io; runs get them from choose_backend, on by default there). An instance
    too large for the device becomes a PatternSplit (mbgpu.cuda.split) over `devices` (indices, the
    first being `device`'s; default: that device alone, so such an instance stops with memory_plan's
    error); `memory_limit`: bytes one slice may use instead of a device's free memory (tests and
    benchmarks set it to split on one GPU)."""
    from .context import Device, open_device
    from .split import PatternSplit, slices_needed

    dev = device if isinstance(device, Device) else open_device(device)
    others = [d for d in (devices or []) if d != getattr(dev, "index", None)]

    def part(spec: InstanceSpec, device) -> CudaBackend:
        return CudaBackend(spec, device=device, precision=precision, asynchronous=asynchronous)

    def make(spec: InstanceSpec):
        if memory_limit is None and not others:  # one GPU: whole instances (its plan's error if too big)
            return part(spec, dev)
        budget = memory_limit if memory_limit is not None else dev.mem_get_info()[0]
        k = slices_needed(spec, precision, budget)
        if k == 1:
            return part(spec, dev)
        opened = [dev] + [open_device(i) for i in others]
        if memory_limit is None:
            k = max(slices_needed(spec, precision, min(d.mem_get_info()[0] for d in opened)), k)
            if k > len(opened):                  # one slice per GPU at most: let the plan's error speak
                return part(spec, dev)
            opened = opened[:k]
        note = getattr(make, "note", None)      # the run's console (choose_backend sets it)
        if note is not None:
            on = sorted({d.index for d in opened})
            note("   %d site patterns do not fit one GPU's memory: split into %d slices on GPU%s %s"
                 % (spec.n_patterns, k, "s" if len(on) > 1 else "", ", ".join(map(str, on))))
        return PatternSplit(spec, part, opened, k)

    make.device = dev          # other GPU work of the run (ParsSPR's parsimony) goes to the same device
    make.asynchronous = asynchronous    # ... and is asynchronous when the flushes are
    return make


def precompile(states=(2, 3, 4, 5, 6, 7, 8, 9, 10, 20), categories=(1, 4, 8), arch: str = "sm_90",
               workers: int = 8) -> int:
    """Fill the kernel cache for many variants in parallel (before many processes or a test run start)."""
    from concurrent.futures import ThreadPoolExecutor

    from .compiler import build_cubin

    jobs = [(name, kernel_defines(s, c, precision))
            for s in states for c in categories for precision in ("double", "single")
            for name in ("likelihood_partials.cu", "likelihood_root.cu", "likelihood_matrices.cu")]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda job: build_cubin(job[0], job[1], arch), jobs))
    return len(jobs)
