"""pycuda launcher of cuda/coulomb.cu: AutoGrid-compatible electrostatic maps on one GPU.

The map is computed in z-slabs (so any grid fits in device memory) and, within a slab, one launch
per tile of receptor atoms (so any receptor fits in constant memory, or in the per-block staging
loop); every launch adds its fp32 tile sums into an fp64 slab. pycuda is imported inside functions only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbgpu.errors import DeviceError
from mbgpu.grid.dielectric import ElectrostaticModel, reciprocal_table
from mbgpu.grid.gpf import GridSpec

SOURCE = "coulomb.cu"
DDD_MODES = {"table": 1, "closed": 0}
ATOM_SOURCES = {"constant": 0, "shared": 1}


@dataclass(frozen=True)
class KernelShape:
    """Compile-time shape of the kernels (the -D flags of coulomb.cu)."""

    nx: int = 8            # grid points per thread along x
    block_x: int = 16
    block_y: int = 8
    tile_atoms: int = 4000  # float4 atoms per constant-memory tile (64 KB limit)
    table_n: int = 8192
    atom_src: str = "shared"  # "shared": staged per block from global memory; "constant"

    def defines(self, ddd_mode: int) -> dict:
        return {"NX": self.nx, "BLOCK_X": self.block_x, "BLOCK_Y": self.block_y,
                "TILE_ATOMS": self.tile_atoms, "TABLE_N": self.table_n,
                "ATOM_SRC": ATOM_SOURCES[self.atom_src], "DDD_MODE": ddd_mode}

    @property
    def launch_atoms(self) -> int:
        """Atoms per launch: the constant tile, or a whole number of shared-memory chunks."""
        if self.atom_src == "constant":
            return self.tile_atoms
        chunk = self.block_x * self.block_y
        return max(chunk, self.tile_atoms // chunk * chunk)


R_EXACT = 12.0   # must equal R_EXACT of coulomb.cu


def bin_guard(spec: GridSpec) -> float:
    """Width around a bin edge (in units of 0.01 A) inside which a close pair is redone in fp64.

    Twice a bound on the fp32 error of 100 r for r < R_EXACT: coordinates up to E = grid half-extent
    + R_EXACT are rounded to fp32 (about 5.2e-7 E in r) and rsqrt/products add 4e-7 r.
    """
    extent = max(spec.half) * spec.spacing + R_EXACT
    return float(min(0.49, 2.0 * (5.2e-5 * extent + 5e-4)))


def pack_atoms(coords: np.ndarray, charges: np.ndarray, center) -> np.ndarray:
    """(n, 4) float32 rows x, y, z (grid frame: minus the centre, in float64 first) and charge."""
    rel = np.asarray(coords, dtype=np.float64) - np.asarray(center, dtype=np.float64)
    out = np.empty((rel.shape[0], 4), dtype=np.float32)
    out[:, :3] = rel
    out[:, 3] = np.asarray(charges, dtype=np.float64)
    return out


class CoulombGrid:
    """Electrostatic maps on `device` (an mbgpu.cuda.context.Device made current by the caller)."""

    def __init__(self, device, shape: KernelShape = KernelShape(), ddd_mode: str = "table",
                 slab_bytes: int = 1 << 29):
        if ddd_mode not in DDD_MODES:
            raise ValueError("ddd_mode must be one of %s" % list(DDD_MODES))
        from mbgpu.cuda.compiler import load_module

        self.device, self.shape, self.slab_bytes = device, shape, int(slab_bytes)
        defines = dict(shape.defines(DDD_MODES[ddd_mode]), R_EXACT="%.1ff" % R_EXACT)
        self.module = load_module(device, SOURCE, defines, extra=("-use_fast_math",))
        self.k_const = self.module.get_function("coulomb_const")
        self.k_ddd = self.module.get_function("coulomb_ddd")
        if shape.atom_src not in ATOM_SOURCES:
            raise ValueError("atom_src must be one of %s" % list(ATOM_SOURCES))
        if shape.atom_src == "constant":
            self.c_atoms, c_bytes = self.module.get_global("c_atoms")
            assert c_bytes == 16 * shape.tile_atoms

    def _slab_planes(self, spec: GridSpec) -> int:
        nz, ny, nx = spec.shape_zyx
        return int(max(1, min(nz, 65535, self.slab_bytes // (8 * nx * ny))))

    def compute(self, coords: np.ndarray, charges: np.ndarray, spec: GridSpec,
                model: ElectrostaticModel) -> np.ndarray:
        """The map as a (z, y, x) float64 array (same units and clamps as AutoGrid)."""
        import pycuda.driver as drv
        import pycuda.gpuarray as gpuarray

        atoms = pack_atoms(coords, charges, spec.center)
        atoms_d = np.zeros((atoms.shape[0], 4), dtype=np.float64)
        atoms_d[:, :3] = np.asarray(coords, dtype=np.float64) - np.asarray(spec.center, dtype=np.float64)
        nz, ny, nx = spec.shape_zyx
        planes = self._slab_planes(spec)
        try:
            slab = gpuarray.empty(planes * ny * nx, dtype=np.float64)
            table = gpuarray.to_gpu(reciprocal_table()[:self.shape.table_n].astype(np.float32))
        except drv.MemoryError as exc:
            raise DeviceError("not enough GPU memory for a %d-plane map slab of %dx%d points "
                              "(%.1f MB); lower slab_bytes" % (planes, nx, ny, planes * nx * ny * 8e-6)) from exc
        atoms_gpu, atoms_d_gpu = gpuarray.to_gpu(atoms), gpuarray.to_gpu(atoms_d)
        step = self.shape.launch_atoms
        scale = model.coeff_estat if model.distance_dependent else model.constant_scale
        out = np.empty((nz, ny, nx), dtype=np.float64)
        for z0 in range(0, nz, planes):
            nzs = min(planes, nz - z0)
            slab.fill(0.0)
            for a0 in range(0, atoms.shape[0], step):
                tile = atoms[a0:a0 + step]
                if self.shape.atom_src == "constant":
                    drv.memcpy_htod(self.c_atoms, np.ascontiguousarray(tile))
                ptrs = (np.uintp(int(atoms_gpu.gpudata) + 16 * a0),
                        np.uintp(int(atoms_d_gpu.gpudata) + 32 * a0))
                self._launch(slab, ptrs, table, tile.shape[0], spec, z0, nzs, model)
            part = slab[:nzs * ny * nx]
            part *= scale                                  # on the device: the same fp64 products as on the host
            part.get(ary=out[z0:z0 + nzs].reshape(-1))     # straight into the map, no host-side copy
        return out

    def _launch(self, slab, ptrs, table, n_atoms: int, spec: GridSpec, z0: int, nzs: int,
                model: ElectrostaticModel) -> None:
        s = self.shape
        nz, ny, nx = spec.shape_zyx
        nex, ney, nez = spec.half
        grid = (-(-nx // (s.block_x * s.nx)), -(-ny // s.block_y), nzs)
        block = (s.block_x, s.block_y, 1)
        geom = (np.int32(nx), np.int32(ny), np.int32(z0), np.int32(nex), np.int32(ney),
                np.int32(nez), np.float32(spec.spacing))
        if model.distance_dependent:
            self.k_ddd(slab.gpudata, ptrs[0], ptrs[1], table.gpudata, np.int32(n_atoms), *geom,
                       np.float64(spec.spacing), np.float32(bin_guard(spec)), block=block, grid=grid)
        else:
            self.k_const(slab.gpudata, ptrs[0], np.int32(n_atoms), *geom, block=block, grid=grid)
