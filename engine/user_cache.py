"""Where mbgpu keeps what it compiles: one folder per user, $XDG_CACHE_HOME/mbgpu (~/.cache/mbgpu).

numba's cache of the compiled CPU code (mbgpu.jit) and the CUDA cubins (mbgpu.cuda.compiler) live in
subfolders of it, outside the install, so a read-only site-packages still gets a cache.
"""
from __future__ import annotations

import os


def user_cache_dir(*parts: str) -> str:
    """$XDG_CACHE_HOME/mbgpu/PARTS, else ~/.cache/mbgpu/PARTS (not created here).

    >>> user_cache_dir("kernels").endswith(os.path.join("mbgpu", "kernels"))
    True
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mbgpu", *parts)
