"""Shared fixtures and the skip rules for `gpu` and `mpi` tests."""
import importlib.util
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

try:        # CI (CI=true): property tests draw the same examples every run, so a red build is reproducible
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        _hypothesis_settings.load_profile("ci")
except ImportError:
    pass
SHARED = ROOT.parent / "shared"


def _cuda_ok() -> bool:
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return False
    return cuda_available()


def _mpi_ok() -> bool:
    """mpi4py and an mpiexec (the `mpi` extra's MPICH, $MBGPU_MPIEXEC, or one on PATH) are present."""
    if importlib.util.find_spec("mpi4py") is None:
        return False
    return bool(os.environ.get("MBGPU_MPIEXEC") or shutil.which("mpiexec", path=os.path.dirname(sys.executable))
                or shutil.which("mpiexec"))


def pytest_collection_modifyitems(config, items):
    cuda = None
    mpi = _mpi_ok()
    if not mpi and os.environ.get("MBGPU_REQUIRE_MPI") == "1" and any("mpi" in item.keywords for item in items):
        raise pytest.UsageError("MBGPU_REQUIRE_MPI=1 but mpi4py or mpiexec is missing: the mpi tests would be "
                                "skipped (pip install -e '.[mpi]')")
    for item in items:
        if "gpu" in item.keywords:
            if cuda is None:
                cuda = _cuda_ok()
            if not cuda:
                item.add_marker(pytest.mark.skip(reason="no CUDA device or pycuda"))
        if "mpi" in item.keywords and not mpi:
            item.add_marker(pytest.mark.skip(reason="needs mpi4py and an mpiexec (pip install -e '.[mpi]')"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout, or $MBGPU_SHARED_DATA (a copy carried to the GPU machine);
    skips when absent, e.g. an sdist test run."""
    path = Path(os.environ["MBGPU_SHARED_DATA"]) if os.environ.get("MBGPU_SHARED_DATA") else SHARED / "data"
    if not path.is_dir():
        pytest.skip("../shared/data is not beside the checkout")
    return path
