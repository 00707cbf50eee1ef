"""mbgpu: a MrBayes-compatible Bayesian phylogenetics engine.

The core (this package) imports neither pycuda nor mpi4py at module level; the CUDA backend lives in
`engine.cuda` and the MPI layer in `engine.mpi`, both imported only when asked for.
"""
from .version import __version__

__all__ = ["__version__"]
