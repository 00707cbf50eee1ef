"""pycuda launcher of the SSV kernel in ssv.cu: one model against many packed sequences.

A `GpuDatabase` uploads a packed `SequenceDB` once (codes as 32-bit words, int64 offsets,
lengths, and a longest-first launch order); `run(profile)` uploads the model's striped int16
score table (about 60*M bytes, kept in shared memory) and returns the maximum SSV cell of each
sequence, which `mbgpu.hmm.scores.finalize_ssv` turns into HMMER's score. pycuda is imported
inside functions so importing this module never needs a GPU.
"""
from __future__ import annotations

import numpy as np

from mbgpu.errors import DeviceError

LANES = 8
NROWS = 30          # residue codes 0..28 and PAD (29)
BLOCK = 512
PAD_SCORE = -127    # HMMER's padding: sbv = 127, subtracted


def striped_table(sb: np.ndarray) -> np.ndarray:
    """uint32 words of the int16 table [NROWS][h][LANES] of s = -sb, k = lane*h + t (0-based)."""
    M = sb.shape[0]
    h = -(-M // LANES)
    tab = np.full((NROWS, h, LANES), PAD_SCORE, dtype=np.int16)
    for lane in range(LANES):
        ks = lane * h + np.arange(h)
        ok = ks < M
        tab[:, np.flatnonzero(ok), lane] = -sb[ks[ok], :NROWS].T
    return np.ascontiguousarray(tab).view(np.uint32).ravel()


def shared_bytes(M: int) -> int:
    """Dynamic shared memory the kernel needs for a model of length M."""
    return NROWS * (-(-M // LANES)) * LANES * 2


class GpuDatabase:
    """A packed sequence database resident on one GPU; reuse it for many models."""

    def __init__(self, dev, db):
        import pycuda.driver as drv

        from .compiler import load_module

        self.dev, self.nseq = dev, len(db)
        codes = db.codes
        if len(codes) % 4:
            codes = np.concatenate([codes, np.full(4 - len(codes) % 4, 29, np.uint8)])
        order = np.argsort(-db.lengths, kind="stable").astype(np.int32)
        with dev:
            self.module = load_module(dev, "ssv.cu", {"SSV_BLOCK": BLOCK})
            self.kernel = self.module.get_function("ssv_kernel")
            self.max_shared = dev.device.get_attribute(
                drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            self.seq = drv.to_device(np.ascontiguousarray(codes).view(np.uint32))
            self.offsets = drv.to_device(db.offsets.astype(np.int64))
            self.lengths = drv.to_device(db.lengths.astype(np.int32))
            self.order = drv.to_device(order)
            self.out = drv.mem_alloc(max(4 * self.nseq, 4))

    def run(self, prof, timing: dict | None = None) -> np.ndarray:
        """int64[nseq] maximum SSV cell per sequence (kernel time in seconds into timing['kernel'])."""
        import pycuda.driver as drv

        smem = shared_bytes(prof.M)
        if smem > self.max_shared:
            raise DeviceError("model %s (M=%d) needs %d bytes of shared memory, the device has %d; "
                              "use --backend cpu" % (prof.name, prof.M, smem, self.max_shared))
        h = -(-prof.M // LANES)
        nthreads = self.nseq * h
        grid = max(1, -(-nthreads // BLOCK))
        with self.dev:
            table = drv.to_device(striped_table(prof.sb))
            self.kernel.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
            drv.memcpy_htod(self.out, np.full(max(self.nseq, 1), -128, dtype=np.int32))
            start, stop = drv.Event(), drv.Event()
            start.record()
            self.kernel(table, self.seq, self.offsets, self.lengths, self.order,
                        np.int64(self.nseq), np.int32(h), self.out,
                        block=(BLOCK, 1, 1), grid=(grid, 1), shared=smem)
            stop.record()
            stop.synchronize()
            if timing is not None:
                timing["kernel"] = stop.time_since(start) / 1e3
            res = np.empty(max(self.nseq, 1), dtype=np.int32)
            drv.memcpy_dtoh(res, self.out)
            table.free()
        return res[:self.nseq].astype(np.int64)

    def free(self) -> None:
        """Release the device buffers."""
        with self.dev:
            for buf in (self.seq, self.offsets, self.lengths, self.order, self.out):
                buf.free()


def ssv_raw_gpu(prof, db, device: int | None = None) -> np.ndarray:
    """Maximum SSV cell per sequence of `db` on one GPU (uploads the database for this call)."""
    from .context import open_device

    gdb = GpuDatabase(open_device(device), db)
    try:
        return gdb.run(prof)
    finally:
        gdb.free()
