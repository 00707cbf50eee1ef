"""numba's options for every compiled function of mbgpu, and where its cache goes.

Imported before any kernel is decorated, which is when numba picks the cache location.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os

import numba

from mbgpu.user_cache import user_cache_dir
from mbgpu.version import __version__


def package_roots() -> list[str]:
    """The folders of mbgpu's sources: this package's, and mbgpu.cuda's and mbgpu.mpi's where they lie
    elsewhere (an editable install maps them to the repository's cuda/ and mpi/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    roots = [here]
    for name in ("mbgpu.cuda", "mbgpu.mpi"):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            folder = os.path.abspath(folder)
            if not folder.startswith(here + os.sep) and folder not in roots:
                roots.append(folder)
    return roots


def source_key(*roots: str) -> str:
    """A short digest of the package's version and every .py file's path, size and mtime under `roots`
    (package_roots() by default).

    numba checks only a cached function's own file: a caller whose callee changed in another module
    (say step.propose_all after pars_spr changed, or device_block after cuda/core_flush changed) would load
    its stale machine code, with the old callee linked in. One cache folder per state of the sources
    makes every change recompile."""
    h = hashlib.sha1(__version__.encode())
    for i, root in enumerate(roots or package_roots()):
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    h.update(("%d:%s/%s:%d:%d;" % (i, os.path.relpath(folder, root), name, st.st_size,
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
