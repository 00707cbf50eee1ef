"""mbgpu: a MrBayes-compatible Bayesian phylogenetics engine.

The core (this package, the folder engine/) imports neither pycuda nor mpi4py at module level; the
CUDA backend lives in `mbgpu.cuda` (cuda/) and the MPI layer in `mbgpu.mpi` (mpi/), both imported only
when asked for.
"""
from .version import __version__

__all__ = ["__version__"]
