"""AutoGrid-compatible electrostatic potential grids (`mbgpu potential`).

Readers for receptors (PDBQT, PQR) and AutoGrid grid parameter files, the AutoGrid 4.2.6
electrostatics model (constant or Mehler-Solmajer distance-dependent dielectric), a blocked numpy
reference, and writers for AutoGrid `.e.map` and OpenDX `.dx`. The CUDA kernels live in
`mbgpu.cuda.coulomb`.
"""
from .dielectric import ElectrostaticModel
from .gpf import GridParameters, GridSpec, read_gpf
from .receptor import Receptor, read_receptor

__all__ = ["ElectrostaticModel", "GridParameters", "GridSpec", "Receptor", "read_gpf", "read_receptor"]
