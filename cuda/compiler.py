"""Compile a `.cu` file of this package once per (source, flags, arch) and load it as a module.

The cubin cache is safe when many processes start at once: each compiles into a private temporary
file and renames it into place atomically, so a reader sees either nothing or a whole cubin.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from mbgpu.errors import DeviceError
from mbgpu.user_cache import user_cache_dir

from . import KERNEL_DIR


def cache_dir() -> Path:
    """The cubin cache: `kernels` in mbgpu's user cache folder (mbgpu.user_cache: $XDG_CACHE_HOME/mbgpu,
    else ~/.cache/mbgpu), beside numba's cache of the CPU code."""
    path = Path(user_cache_dir("kernels"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def _nvcc_version() -> str:
    try:
        return subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise DeviceError("nvcc was not found or failed; CUDA kernels cannot be built") from exc


def _cache_key(name: str, defines: dict, arch: str, extra: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for f in sorted(KERNEL_DIR.glob("*.cu*")):  # headers may be included by any source
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(repr((name, sorted(defines.items()), arch, extra)).encode())
    h.update(_nvcc_version().encode())
    return h.hexdigest()[:32]


def define_flags(defines: dict) -> list[str]:
    """`{'NSTATES': 4, 'DOUBLE': None}` -> `['-DNSTATES=4', '-DDOUBLE']`."""
    return ["-D%s" % k if v is None else "-D%s=%s" % (k, v) for k, v in sorted(defines.items())]


def build_cubin(name: str, defines: dict, arch: str, extra: tuple[str, ...] = ()) -> Path:
    """Return the path of the cached cubin for `name` (a file in cuda/), compiling it if needed."""
    src = KERNEL_DIR / name
    if not src.exists():
        raise DeviceError("kernel source %s is not installed" % src)
    out = cache_dir() / ("%s-%s-%s.cubin" % (src.stem, arch, _cache_key(name, defines, arch, extra)))
    if out.exists():
        return out
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".cubin.tmp")
    os.close(fd)
    cmd = ["nvcc", "-cubin", "-O3", "-arch", arch, "-std=c++17", "-I", str(KERNEL_DIR),
           *define_flags(defines), *extra, "-o", tmp, str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise DeviceError("nvcc failed on %s: %s" % (name, proc.stderr.strip()[-2000:]))
    os.replace(tmp, out)
    return out


def load_module(device, name: str, defines: dict | None = None, extra: tuple[str, ...] = ()):
    """Compile (cached) and load `name` for `device` (a context.Device, made current by the caller)."""
    import pycuda.driver as drv

    path = build_cubin(name, dict(defines or {}), device.arch, tuple(extra))
    return drv.module_from_file(str(path))
