"""mbgpu: a MrBayes-compatible Bayesian phylogenetics engine.

The core (this package) imports neither pycuda nor mpi4py at module level; the CUDA backend lives in
`engine.cuda` and the MPI layer in `engine.mpi`, both imported only when asked for.
"""
from pathlib import Path as _Path

from .version import __version__


def _source_checkout_subpackages(path: list) -> None:
    """Run from a source checkout (tests, benchmarks), `engine.cuda`/`engine.mpi` live in ../cuda and ../mpi.

    Installed (wheel or editable), setup.py maps them under engine/ and this does nothing.
    """
    here = _Path(__file__).resolve().parent
    root = here.parent
    if not (here / "cuda").exists() and (root / "setup.py").is_file() and (root / "cuda" / "__init__.py").is_file():
        path.append(str(root))


_source_checkout_subpackages(__path__)

__all__ = ["__version__"]
