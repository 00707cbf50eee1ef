"""Pick a backend (CUDA or the numpy reference) and compute an electrostatic map."""
from __future__ import annotations

import numpy as np

from mbgpu.errors import DeviceError

from .dielectric import ElectrostaticModel
from .gpf import GridSpec
from .receptor import Receptor
from .reference import potential_grid

BACKENDS = ("auto", "gpu", "cpu")


def gpu_usable() -> bool:
    """True when pycuda and a CUDA device are there (the `auto` backend then uses the GPU)."""
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return False
    return cuda_available()


def compute_potential(receptor: Receptor, spec: GridSpec, model: ElectrostaticModel,
                      backend: str = "auto", device: int | None = None) -> tuple[np.ndarray, str]:
    """The map as a (z, y, x) float64 array and the name of the backend that computed it."""
    if backend not in BACKENDS:
        raise ValueError("backend must be one of %s" % (BACKENDS,))
    use_gpu = backend == "gpu" or (backend == "auto" and gpu_usable())
    if not use_gpu:
        return potential_grid(spec, receptor.coords, receptor.charges, model), "cpu (numpy)"
    from mbgpu.cuda.context import open_device
    from mbgpu.cuda.coulomb import CoulombGrid

    dev = open_device(device)
    with dev:
        values = CoulombGrid(dev).compute(receptor.coords, receptor.charges, spec, model)
    if not np.all(np.isfinite(values)):
        raise DeviceError("the GPU returned non-finite map values")
    return values, "gpu %d" % dev.index
