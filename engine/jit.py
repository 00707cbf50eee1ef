"""numba's options for every compiled function of mbgpu, and where its cache goes.

Imported before any kernel is decorated, which is when numba picks the cache location.
"""
from __future__ import annotations

import os

import numba


def _cache_in_user_folder() -> None:
    """numba's `cache=True` writes next to this module by default, i.e. into the install: a read-only
    site-packages gets no cache, and an uninstall leaves the files behind (an `mbgpu/` folder that
    shadows a later editable install). Unless the user set NUMBA_CACHE_DIR, compiled kernels go to
    $XDG_CACHE_HOME/mbgpu/numba (~/.cache/mbgpu/numba). Set before the kernels below are decorated,
    which is when numba picks the cache location."""
    if not numba.config.CACHE_DIR:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        numba.config.CACHE_DIR = os.path.join(base, "mbgpu", "numba")


_cache_in_user_folder()
JIT_OPTIONS = dict(cache=True, nogil=True)   # every @numba.njit of mbgpu takes these
