"""Writers (and a reader) for grid files: AutoGrid `.e.map` and OpenDX `.dx`.

An AutoGrid map is six header lines then one value per line, x fastest, then y, then z. AutoGrid
prints `0.` when |E| < 0.0001, else `%.3f` of (float) floor(E * 1000 + 0.5) / 1000 (its round3dp
without HAVE_ROUND, as the Debian 4.2.6 build behaves: -0.0003 prints as `0.000`, not `-0.000`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError, Location

from .gpf import GridSpec

PRECISION = 0.0001     # autogrid.h: |E| below this is written as `0.`
CHUNK = 1 << 18        # values formatted per join


@dataclass(frozen=True)
class MapHeader:
    """The names AutoGrid writes into the six header lines."""

    gpf_name: str
    fld_name: str
    receptor_name: str


def autogrid_values(values: np.ndarray) -> np.ndarray:
    """The float32 numbers AutoGrid prints: round3dp(E) cast to float (before the `0.` rule)."""
    v = np.asarray(values, dtype=np.float64)
    return (np.floor(v * 1000.0 + 0.5) / 1000.0 + 0.0).astype(np.float32)


def format_values(values: np.ndarray) -> list[str]:
    """One text line (without newline) per value, exactly as AutoGrid formats them."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    shown = autogrid_values(flat).tolist()
    zero = (np.abs(flat) < PRECISION).tolist()
    return ["0." if z else "%.3f" % s for s, z in zip(shown, zero)]


def header_lines(spec: GridSpec, header: MapHeader) -> list[str]:
    """The six header lines of an AutoGrid map."""
    return ["GRID_PARAMETER_FILE %s" % header.gpf_name,
            "GRID_DATA_FILE %s" % header.fld_name,
            "MACROMOLECULE %s" % header.receptor_name,
            "SPACING %.3f" % spec.spacing,
            "NELEMENTS %d %d %d" % spec.nelements,
            "CENTER %.3f %.3f %.3f" % spec.center]


def _atomic_write(path: str | Path, pieces) -> None:
    """Write text pieces to a temporary file beside `path`, then rename it into place."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp%d" % os.getpid())
    try:
        with open(tmp, "w") as fh:
            for piece in pieces:
                fh.write(piece)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp.exists():
            tmp.unlink()
        raise InputFileError("cannot write: %s" % exc.strerror, Location(str(path))) from None


def write_emap(path: str | Path, values_zyx: np.ndarray, spec: GridSpec, header: MapHeader) -> None:
    """Write an AutoGrid `.e.map` (values as a (z, y, x) array or flat in that order)."""
    flat = np.asarray(values_zyx, dtype=np.float64).ravel()
    assert flat.size == spec.n_points, "map has %d values for %d points" % (flat.size, spec.n_points)

    def pieces():
        yield "\n".join(header_lines(spec, header)) + "\n"
        for s in range(0, flat.size, CHUNK):
            yield "\n".join(format_values(flat[s:s + CHUNK])) + "\n"
    _atomic_write(path, pieces())


def write_dx(path: str | Path, values_zyx: np.ndarray, spec: GridSpec, comment: str = "") -> None:
    """Write OpenDX (VMD/PyMOL/ChimeraX); DX lists values with z fastest, so the array is transposed."""
    nz, ny, nx = spec.shape_zyx
    data = np.asarray(values_zyx, dtype=np.float64).reshape(nz, ny, nx).transpose(2, 1, 0).ravel()
    ox, oy, oz = spec.origin()
    h = spec.spacing
    head = ["# %s" % line for line in (comment or "mbgpu potential").splitlines()]
    head += ["object 1 class gridpositions counts %d %d %d" % (nx, ny, nz),
             "origin %.6e %.6e %.6e" % (ox, oy, oz),
             "delta %.6e 0.000000e+00 0.000000e+00" % h,
             "delta 0.000000e+00 %.6e 0.000000e+00" % h,
             "delta 0.000000e+00 0.000000e+00 %.6e" % h,
             "object 2 class gridconnections counts %d %d %d" % (nx, ny, nz),
             "object 3 class array type double rank 0 items %d data follows" % data.size]
    tail = ['attribute "dep" string "positions"',
            'object "regular positions regular connections" class field',
            'component "positions" value 1', 'component "connections" value 2',
            'component "data" value 3']

    def pieces():
        yield "\n".join(head) + "\n"
        step = CHUNK - CHUNK % 3
        for s in range(0, data.size, step):
            txt = ["%.6e" % v for v in data[s:s + step].tolist()]
            yield "\n".join(" ".join(txt[i:i + 3]) for i in range(0, len(txt), 3)) + "\n"
        yield "\n".join(tail) + "\n"
    _atomic_write(path, pieces())


def read_map(path: str | Path) -> tuple[dict, np.ndarray]:
    """Read an AutoGrid map: (header dict keyword -> rest of line, flat float64 values)."""
    path = str(path)
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise InputFileError("cannot read map: %s" % exc.strerror, Location(path)) from None
    if len(lines) < 6:
        raise InputFileError("an AutoGrid map has six header lines", Location(path))
    header = dict((ln.split(None, 1) + [""])[:2] for ln in lines[:6])
    try:
        values = np.array([float(v) for v in lines[6:] if v.strip()], dtype=np.float64)
    except ValueError:
        raise InputFileError("a map value is not a number", Location(path)) from None
    return header, values


def read_dx(path: str | Path) -> tuple[tuple[int, int, int], np.ndarray, np.ndarray, np.ndarray]:
    """Read a DX written by write_dx: ((nx, ny, nz), origin, deltas diagonal, (z, y, x) values)."""
    counts, origin, deltas, values = None, None, [], []
    reading = False
    for line in Path(path).read_text().splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if reading and not f[0][0].isalpha():
            values.extend(float(v) for v in f)
            continue
        reading = False
        if f[0] == "object" and "gridpositions" in f:
            counts = tuple(int(v) for v in f[-3:])
        elif f[0] == "origin":
            origin = np.array([float(v) for v in f[1:4]])
        elif f[0] == "delta":
            deltas.append(max(float(v) for v in f[1:4]))
        elif f[0] == "object" and "data" in f and "follows" in f:
            reading = True
    nx, ny, nz = counts
    arr = np.array(values).reshape(nx, ny, nz).transpose(2, 1, 0)
    return counts, origin, np.array(deltas), arr
