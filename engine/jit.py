"""numba's options for every compiled function of mbgpu, and where its cache goes.

Imported before any kernel is decorated, which is when numba picks the cache location.
"""
from __future__ import annotations

import hashlib
import os

import numba

from mbgpu.user_cache import user_cache_dir
from mbgpu.version import __version__


def source_key(root: str = os.path.dirname(os.path.abspath(__file__))) -> str:
    """A short digest of the package's version and every .py file's path, size and mtime under `root`.

    numba checks only a cached function's own file: a caller whose callee changed in another module
    (say step.propose_all after pars_spr changed) would load its stale machine code, with the old
    callee linked in. One cache folder per state of the sources makes every change recompile."""
    h = hashlib.sha1(__version__.encode())
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(("%s/%s:%d:%d;" % (os.path.relpath(folder, root), name, st.st_size,
                                            st.st_mtime_ns)).encode())
    return h.hexdigest()[:12]


def _cache_in_user_folder() -> None:
    """numba's `cache=True` writes next to this module by default, i.e. into the install: a read-only
    site-packages gets no cache, and an uninstall leaves the files behind (an `mbgpu/` folder that
    shadows a later editable install). Unless the user set NUMBA_CACHE_DIR, compiled kernels go to
    $XDG_CACHE_HOME/mbgpu/numba/KEY (~/.cache/mbgpu/numba/KEY, KEY = source_key()). Set before the
    kernels below are decorated, which is when numba picks the cache location."""
    if not numba.config.CACHE_DIR:
        numba.config.CACHE_DIR = user_cache_dir("numba", source_key())


_cache_in_user_folder()
JIT_OPTIONS = dict(cache=True, nogil=True)   # every @numba.njit of mbgpu takes these
