"""numba's options for every compiled function of mbgpu, and where its cache goes.

Imported before any kernel is decorated, which is when numba picks the cache location.
"""
from __future__ import annotations

import numba

from mbgpu.user_cache import user_cache_dir


def _cache_in_user_folder() -> None:
    """numba's `cache=True` writes next to this module by default, i.e. into the install: a read-only
    site-packages gets no cache, and an uninstall leaves the files behind (an `mbgpu/` folder that
    shadows a later editable install). Unless the user set NUMBA_CACHE_DIR, compiled kernels go to
    $XDG_CACHE_HOME/mbgpu/numba (~/.cache/mbgpu/numba). Set before the kernels below are decorated,
    which is when numba picks the cache location."""
    if not numba.config.CACHE_DIR:
        numba.config.CACHE_DIR = user_cache_dir("numba")


_cache_in_user_folder()
JIT_OPTIONS = dict(cache=True, nogil=True)   # every @numba.njit of mbgpu takes these
