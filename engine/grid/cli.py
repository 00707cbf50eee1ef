"""`mbgpu potential RECEPTOR GRID.gpf [-o OUT.e.map] [--dx]`: an AutoGrid-compatible .e.map."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from mbgpu.errors import MbgpuError

from .gpf import read_gpf
from .mapfile import MapHeader, write_dx, write_emap
from .potential import BACKENDS, compute_potential
from .receptor import read_receptor


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line with exit status 2."""

    def error(self, message: str):
        print("mbgpu potential: error: %s" % message, file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mbgpu potential",
                description="Electrostatic potential map of a receptor, as AutoGrid 4.2.6 computes it.")
    p.add_argument("receptor", help="receptor with partial charges (.pdbqt, or .pqr)")
    p.add_argument("gpf", help="AutoGrid grid parameter file (npts, spacing, gridcenter, dielectric)")
    p.add_argument("-o", "--output", help="output .e.map (default: the gpf's elecmap name, "
                   "else RECEPTOR.e.map), written in the current directory unless a path is given")
    p.add_argument("--dx", action="store_true", help="also write OpenDX (same name, .dx)")
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="gpu, cpu (numpy reference) or auto (the GPU when there is one)")
    p.add_argument("--device", type=int, default=None, help="CUDA device index (default 0)")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    return p


def output_paths(args, params) -> tuple[Path, Path]:
    """The .e.map path and the .dx path beside it."""
    if args.output:
        out = Path(args.output)
    elif params.elecmap:
        out = Path(Path(params.elecmap).name)
    else:
        out = Path(Path(args.receptor).stem + ".e.map")
    name = out.name
    stem = name[:-len(".e.map")] if name.endswith(".e.map") else out.stem
    return out, out.with_name(stem + ".dx")


def main(argv: list[str]) -> int:
    """Run the tool; user mistakes raise MbgpuError (printed as one line by mbgpu.cli)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    params = read_gpf(args.gpf)
    receptor = read_receptor(args.receptor)
    spec = params.grid(receptor.mean())
    t0 = time.perf_counter()
    values, backend = compute_potential(receptor, spec, params.model, args.backend, args.device)
    seconds = time.perf_counter() - t0
    out, dx = output_paths(args, params)
    header = MapHeader(Path(args.gpf).name, params.gridfld or "none", Path(args.receptor).name)
    write_emap(out, values, spec, header)
    if args.dx:
        write_dx(dx, values, spec, "mbgpu potential %s %s (%s)" % (
            Path(args.receptor).name, Path(args.gpf).name, params.model.describe()))
    if not args.quiet:
        nz, ny, nx = spec.shape_zyx
        print("mbgpu potential: %s: %dx%dx%d points, %d atoms, %s; %s in %.3f s; min %.3f max %.3f"
              % (out, nx, ny, nz, receptor.n_atoms, params.model.describe(), backend, seconds,
                 float(np.min(values)), float(np.max(values))))
    return 0


if __name__ == "__main__":  # pragma: no cover
    try:
        sys.exit(main(sys.argv[1:]))
    except MbgpuError as err:
        print(err.one_line(), file=sys.stderr)
        sys.exit(2)
