"""Fixtures of the CUDA likelihood tests: the oracle folder and the oracle CASES table of test_likelihood."""
import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def oracle_dir(shared_data) -> Path:
    """The likelihood oracles, ../shared/data/oracles (MBGPU_SHARED points at a copy of shared/ elsewhere)."""
    return shared_data / "oracles"


@pytest.fixture(scope="session")
def oracle_cases():
    """tests/test_likelihood/test_oracles.py loaded as a helper module (its CASES and readers)."""
    pytest.importorskip("dendropy")
    path = HERE.parent / "test_likelihood" / "test_oracles.py"
    spec = importlib.util.spec_from_file_location("mbgpu_oracle_cases", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def device():
    """GPU 0 (of those CUDA_VISIBLE_DEVICES leaves), opened once for the session."""
    from mbgpu.cuda.context import open_device

    return open_device()
