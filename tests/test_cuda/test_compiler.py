"""The cubin cache's place: mbgpu's one user cache folder, beside numba's cache (no variable of its own); the
kernels' -D flags (which partials path, where the MMA matrices live)."""
import importlib.util
import os

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


def test_numba_cache_key_covers_the_cuda_and_mpi_sources():
    """An editable install maps mbgpu.cuda and mbgpu.mpi to the repository's cuda/ and mpi/, outside the
    package folder: their files must still change the cache folder (device_block links core_flush's code)."""
    roots = mbgpu.jit.package_roots()
    for name in ("mbgpu.cuda.core_flush", "mbgpu.mpi.stop_check"):
        origin = os.path.abspath(importlib.util.find_spec(name).origin)
        assert any(origin.startswith(root + os.sep) for root in roots), (name, roots)


def test_kernel_flags_choose_the_path_and_where_the_mma_matrices_live():
    """uses_mma: wide state spaces on sm_80+, fp64 always and fp32 above 32 states; the MMA flags say
    whether both children's fragment-order matrices fit the shared-memory budget (protein yes, codons no)."""
    from mbgpu.cuda.backend import MMA_SHARED_LIMIT, kernel_defines, mma_fragment_bytes, uses_mma

    assert uses_mma(20, "sm_90", "double") and not uses_mma(20, "sm_90", "single")
    assert uses_mma(61, "sm_80", "single") and not uses_mma(20, "sm_75", "double") and not uses_mma(4, "sm_90")
    protein = kernel_defines(20, 4, "double", mma=True)
    assert protein["WIDE_MMA"] == 1 and protein["MMA_B_SHARED"] == 1 and protein["PATTERN_BLOCK"] == 64
    assert mma_fragment_bytes(20, 4) == 4 * 3 * 5 * 32 * 8
    codon = kernel_defines(61, 4, "double", mma=True)
    assert codon["MMA_B_SHARED"] == 0 and 2 * mma_fragment_bytes(61, 4) > MMA_SHARED_LIMIT
    assert "WIDE_MMA" not in kernel_defines(20, 4, "single")
