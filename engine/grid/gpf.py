"""AutoGrid grid parameter files (.gpf): the keywords the electrostatic map depends on.

Read: npts, spacing, gridcenter (x y z or `auto`), receptor, dielectric, parameter_file (for
FE_coeff_estat), elecmap and gridfld (for the map header). Other keywords (map, ligand_types, smooth,
...) are accepted and ignored. Text after '#' is a comment. npts are made even like AutoGrid does.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError, Location

from .dielectric import DEFAULT_COEFF_ESTAT, ElectrostaticModel

DEFAULT_SPACING = 0.375
DEFAULT_DIELECTRIC = -0.1465   # AutoDock 4 default: distance-dependent


@dataclass(frozen=True)
class GridSpec:
    """A grid of (n+1) points per axis around `center`; x index fastest, like AutoGrid writes it."""

    nelements: tuple[int, int, int]
    spacing: float
    center: tuple[float, float, float]

    @property
    def shape_zyx(self) -> tuple[int, int, int]:
        """Points per axis in (z, y, x) order, the order of the values in a map file."""
        nx, ny, nz = (n + 1 for n in self.nelements)
        return nz, ny, nx

    @property
    def n_points(self) -> int:
        nz, ny, nx = self.shape_zyx
        return nx * ny * nz

    @property
    def half(self) -> tuple[int, int, int]:
        """ne: the index offset of the centre point on each axis."""
        return tuple(n // 2 for n in self.nelements)

    def axis_offsets(self, axis: int) -> np.ndarray:
        """Coordinates (relative to the centre) of the points on one axis: icoord * spacing."""
        ne = self.half[axis]
        return np.arange(-ne, ne + 1, dtype=np.float64) * self.spacing

    def origin(self) -> np.ndarray:
        """Absolute coordinates of the first point (x, y, z all minimal)."""
        return np.asarray(self.center) - np.asarray(self.half) * self.spacing


@dataclass(frozen=True)
class GridParameters:
    """What a .gpf says about the electrostatic map (center None means `gridcenter auto`)."""

    path: str
    nelements: tuple[int, int, int]
    spacing: float = DEFAULT_SPACING
    center: tuple[float, float, float] | None = None
    receptor: str | None = None
    model: ElectrostaticModel = ElectrostaticModel.from_gpf_value(DEFAULT_DIELECTRIC)
    elecmap: str | None = None
    gridfld: str | None = None
    parameter_file: str | None = None

    def grid(self, receptor_mean: np.ndarray | None = None) -> GridSpec:
        """The grid; `gridcenter auto` needs the receptor's mean coordinate."""
        if self.center is None:
            if receptor_mean is None:
                raise InputFileError("gridcenter auto needs the receptor", Location(self.path))
            center = tuple(float(c) for c in receptor_mean)
        else:
            center = self.center
        return GridSpec(self.nelements, self.spacing, center)


def _floats(args: list[str], n: int, where: Location, key: str) -> list[float]:
    if len(args) < n:
        raise InputFileError("%s needs %d numbers" % (key, n), where)
    try:
        return [float(a) for a in args[:n]]
    except ValueError:
        raise InputFileError("%s: cannot read numbers from %r" % (key, " ".join(args[:n])), where) from None


def _npts(args: list[str], where: Location) -> tuple[int, int, int]:
    if len(args) < 3:
        raise InputFileError("npts needs three integers", where)
    try:
        vals = [int(a) for a in args[:3]]
    except ValueError:
        raise InputFileError("npts: cannot read integers from %r" % " ".join(args[:3]), where) from None
    if min(vals) < 0:
        raise InputFileError("npts must not be negative", where)
    even = tuple(v // 2 * 2 for v in vals)
    if even != tuple(vals):
        print("mbgpu potential: %s: npts must be even; using %d %d %d (as AutoGrid does)"
              % (where, *even), file=sys.stderr)
    return even


def read_coeff_estat(path: Path, where: Location) -> float:
    """FE_coeff_estat from an AutoDock parameter library (.dat)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise InputFileError("cannot read parameter_file %s: %s" % (path, exc.strerror), where) from None
    for i, line in enumerate(lines, 1):
        fields = line.split("#")[0].split()
        if len(fields) >= 2 and fields[0] == "FE_coeff_estat":
            return _floats(fields[1:], 1, Location(str(path), i, 1), "FE_coeff_estat")[0]
    return DEFAULT_COEFF_ESTAT


def _resolve(name: str, gpf_dir: Path) -> Path:
    """A file named in the gpf: relative to the gpf's folder, else to the working directory."""
    p = Path(name)
    if p.is_absolute() or not (gpf_dir / p).exists():
        return p
    return gpf_dir / p


def _parse_lines(text: str, path: str) -> dict:
    vals: dict = {"path": path}
    diel = DEFAULT_DIELECTRIC
    for i, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#")[0].split()
        if not fields:
            continue
        key, args, where = fields[0].lower(), fields[1:], Location(path, i, 1)
        if key == "npts":
            vals["nelements"] = _npts(args, where)
        elif key == "spacing":
            vals["spacing"] = _floats(args, 1, where, key)[0]
            if vals["spacing"] <= 0:
                raise InputFileError("spacing must be positive", where)
        elif key == "gridcenter":
            auto = bool(args) and args[0].lower().startswith("auto")
            vals["center"] = None if auto else tuple(_floats(args, 3, where, key))
        elif key == "dielectric":
            diel = _floats(args, 1, where, key)[0]
        elif key in ("receptor", "elecmap", "gridfld", "parameter_file"):
            if not args:
                raise InputFileError("%s needs a file name" % key, where)
            vals[key] = args[0]
            vals["_" + key + "_line"] = i
    vals["_diel"] = diel
    return vals


def parse_gpf(text: str, path: str) -> GridParameters:
    """Parse .gpf text; `path` names the file in errors and locates parameter_file."""
    vals = _parse_lines(text, path)
    if "nelements" not in vals:
        raise InputFileError("no npts line: the grid size is unknown", Location(path))
    coeff = DEFAULT_COEFF_ESTAT
    if vals.get("parameter_file"):
        where = Location(path, vals["_parameter_file_line"], 1)
        coeff = read_coeff_estat(_resolve(vals["parameter_file"], Path(path).parent), where)
    model = ElectrostaticModel.from_gpf_value(vals["_diel"], coeff)
    keep = {k: v for k, v in vals.items() if not k.startswith("_")}
    return GridParameters(model=model, **keep)


def read_gpf(path: str | Path) -> GridParameters:
    """Read an AutoGrid .gpf file."""
    path = str(path)
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise InputFileError("cannot read grid parameter file: %s" % exc.strerror, Location(path)) from None
    return parse_gpf(text, path)
