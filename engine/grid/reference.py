"""Numpy reference of the AutoGrid 4.2.6 electrostatic map, blocked so it fits in memory.

Distances are formed exactly as AutoGrid does (atom coordinates minus the centre, minus
icoord * spacing, all in float64) so the Mehler-Solmajer bin of every pair is AutoGrid's.
"""
from __future__ import annotations

import numpy as np

from .dielectric import APPROX_ZERO, R_MIN_INV, ElectrostaticModel, reciprocal_table, table_index
from .gpf import GridSpec

PAIR_BLOCK = 1 << 21   # grid point x atom pairs per block (a few 16 MB float64 temporaries)


def relative_coords(coords: np.ndarray, spec: GridSpec) -> np.ndarray:
    """Atom coordinates in the grid frame (AutoGrid subtracts the centre once, in float64)."""
    return np.asarray(coords, dtype=np.float64) - np.asarray(spec.center, dtype=np.float64)


def _pair_weights(points: np.ndarray, rel: np.ndarray, model: ElectrostaticModel,
                  rtable: np.ndarray | None) -> np.ndarray:
    """(P, A) array of 332/eps(r) / max(r, 0.5) (without charge and coefficient)."""
    d = rel[None, :, 0] - points[:, 0:1]
    r2 = d * d
    d = rel[None, :, 1] - points[:, 1:2]
    r2 += d * d
    d = rel[None, :, 2] - points[:, 2:3]
    r2 += d * d
    r = np.sqrt(r2, out=r2)
    np.maximum(r, APPROX_ZERO, out=r)
    w = 1.0 / np.maximum(r, R_MIN_INV)
    if model.distance_dependent:
        w *= rtable[table_index(r)]
    return w


def potential_at(points: np.ndarray, rel: np.ndarray, charges: np.ndarray,
                 model: ElectrostaticModel, pair_block: int = PAIR_BLOCK) -> np.ndarray:
    """Map values at `points` (P, 3; grid frame) for atoms `rel` (A, 3; grid frame)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    charges = np.asarray(charges, dtype=np.float64)
    out = np.empty(points.shape[0], dtype=np.float64)
    rtable = reciprocal_table() if model.distance_dependent else None
    scale = model.coeff_estat if model.distance_dependent else model.constant_scale
    a_step = max(1, min(rel.shape[0], pair_block))
    p_step = max(1, pair_block // a_step)
    for p0 in range(0, points.shape[0], p_step):
        pts = points[p0:p0 + p_step]
        acc = np.zeros(pts.shape[0], dtype=np.float64)
        for a0 in range(0, rel.shape[0], a_step):
            acc += _pair_weights(pts, rel[a0:a0 + a_step], model, rtable) @ charges[a0:a0 + a_step]
        out[p0:p0 + p_step] = acc * scale
    return out


def grid_points(spec: GridSpec, flat_index: np.ndarray | None = None) -> np.ndarray:
    """(P, 3) grid-frame coordinates of all points (x fastest) or of the given flat indices."""
    nz, ny, nx = spec.shape_zyx
    if flat_index is None:
        flat_index = np.arange(nx * ny * nz, dtype=np.int64)
    iz, rem = np.divmod(np.asarray(flat_index, dtype=np.int64), nx * ny)
    iy, ix = np.divmod(rem, nx)
    axes = [spec.axis_offsets(a) for a in range(3)]
    return np.stack([axes[0][ix], axes[1][iy], axes[2][iz]], axis=1)


def potential_grid(spec: GridSpec, coords: np.ndarray, charges: np.ndarray,
                   model: ElectrostaticModel, flat_index: np.ndarray | None = None) -> np.ndarray:
    """The map on the whole grid as a (z, y, x) array, or at `flat_index` points as a 1-D array."""
    rel = relative_coords(coords, spec)
    if flat_index is not None:
        return potential_at(grid_points(spec, flat_index), rel, charges, model)
    nz, ny, nx = spec.shape_zyx
    out = np.empty((nz, ny, nx), dtype=np.float64)
    plane = np.arange(nx * ny, dtype=np.int64)
    for z in range(nz):
        pts = grid_points(spec, plane + z * nx * ny)
        out[z] = potential_at(pts, rel, charges, model).reshape(ny, nx)
    return out
