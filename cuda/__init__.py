"""CUDA side of mbgpu (installed as `mbgpu.cuda`): device code in `*.cu`, pycuda host code beside it.

Importing this package does not import pycuda; `context.open_device` and `compiler.load_module` do.
"""
from pathlib import Path

KERNEL_DIR = Path(__file__).resolve().parent


def kernel_sources():
    """Every `.cu` file shipped with the package (CI compiles each with nvcc)."""
    return sorted(KERNEL_DIR.glob("*.cu"))
