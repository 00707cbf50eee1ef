"""The cubin cache's place: mbgpu's one user cache folder, beside numba's cache (no variable of its own)."""
import numba

import mbgpu.jit
from mbgpu.cuda import compiler
from mbgpu.user_cache import user_cache_dir


def test_kernel_cache_is_beside_the_numba_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compiler.cache_dir() == tmp_path / "mbgpu" / "kernels" and compiler.cache_dir().is_dir()
    assert user_cache_dir("numba") == str(tmp_path / "mbgpu" / "numba")       # what mbgpu.jit gives numba
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compiler.cache_dir() == tmp_path / "home" / ".cache" / "mbgpu" / "kernels"


def test_numba_cache_comes_from_the_same_place(monkeypatch, tmp_path):
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mbgpu.jit._cache_in_user_folder()
    assert numba.config.CACHE_DIR == str(tmp_path / "mbgpu" / "numba")
