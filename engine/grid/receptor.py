"""Receptor coordinates and partial charges from PDBQT (AutoDock) or PQR (APBS/pdb2pqr) files.

Only what the electrostatic map needs is kept: Cartesian coordinates (Angstrom) and charges (e).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError, Location

ATOM_RECORDS = ("ATOM", "HETATM")


@dataclass(frozen=True)
class Receptor:
    """Atoms of a receptor: `coords` float64 (n, 3), `charges` float64 (n,), and the source path."""

    coords: np.ndarray
    charges: np.ndarray
    path: str

    @property
    def n_atoms(self) -> int:
        return int(self.charges.shape[0])

    def mean(self) -> np.ndarray:
        """Mean of the coordinates: AutoGrid's `gridcenter auto`."""
        return self.coords.mean(axis=0)


def _is_atom(line: str) -> bool:
    return line.startswith(ATOM_RECORDS)


def _number(text: str, path: str, lineno: int, col: int, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputFileError("cannot read the %s from %r" % (what, text.strip()),
                             Location(path, lineno, col)) from None


def _pdbqt_atom(line: str, path: str, lineno: int) -> tuple[float, float, float, float]:
    """x, y, z from the PDB columns 31-54 and the charge from columns 71-76 (AutoGrid's reading)."""
    if len(line.rstrip("\n")) < 76:
        raise InputFileError("PDBQT atom line is shorter than 76 columns (no partial charge)",
                             Location(path, lineno, 1))
    x = _number(line[30:38], path, lineno, 31, "x coordinate")
    y = _number(line[38:46], path, lineno, 39, "y coordinate")
    z = _number(line[46:54], path, lineno, 47, "z coordinate")
    q = _number(line[70:76], path, lineno, 71, "partial charge")
    return x, y, z, q


def _pqr_atom(line: str, path: str, lineno: int) -> tuple[float, float, float, float]:
    """PQR is whitespace separated; the last five fields are x y z charge radius."""
    fields = line.split()
    if len(fields) < 9:
        raise InputFileError("PQR atom line needs '... x y z charge radius'", Location(path, lineno, 1))
    x, y, z, q = (_number(f, path, lineno, 1, w) for f, w in
                  zip(fields[-5:-1], ("x coordinate", "y coordinate", "z coordinate", "charge")))
    return x, y, z, q


def parse_receptor(text: str, path: str, fmt: str) -> Receptor:
    """Parse receptor text in `fmt` ('pdbqt' or 'pqr'); ATOM/HETATM records only."""
    parse = _pdbqt_atom if fmt == "pdbqt" else _pqr_atom
    rows = [parse(line, path, i) for i, line in enumerate(text.splitlines(), 1) if _is_atom(line)]
    if not rows:
        raise InputFileError("no ATOM/HETATM records found", Location(path))
    arr = np.asarray(rows, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise InputFileError("a coordinate or charge is not a finite number", Location(path))
    return Receptor(coords=np.ascontiguousarray(arr[:, :3]), charges=np.ascontiguousarray(arr[:, 3]),
                    path=path)


def receptor_format(path: str) -> str:
    """'pqr' for *.pqr, else 'pdbqt' (AutoGrid's receptor format)."""
    return "pqr" if Path(path).suffix.lower() == ".pqr" else "pdbqt"


def read_receptor(path: str | Path, fmt: str | None = None) -> Receptor:
    """Read a PDBQT or PQR receptor (format from the suffix unless `fmt` is given)."""
    path = str(path)
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise InputFileError("cannot read receptor: %s" % exc.strerror, Location(path)) from None
    return parse_receptor(text, path, fmt or receptor_format(path))
