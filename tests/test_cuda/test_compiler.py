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
    assert numba.config.CACHE_DIR == str(tmp_path / "mbgpu" / "numba" / mbgpu.jit.source_key())


def test_numba_cache_folder_changes_with_any_source_file(tmp_path):
    """numba checks only a function's own file, so a changed callee module must change the folder."""
    (tmp_path / "core").mkdir()
    mod = tmp_path / "core" / "callee.py"
    mod.write_text("X = 1\n")
    (tmp_path / "notes.txt").write_text("not source")
    first = mbgpu.jit.source_key(str(tmp_path))
    assert mbgpu.jit.source_key(str(tmp_path)) == first
    (tmp_path / "notes.txt").write_text("still not source")
    assert mbgpu.jit.source_key(str(tmp_path)) == first
    mod.write_text("X = 22\n")
    assert mbgpu.jit.source_key(str(tmp_path)) != first
