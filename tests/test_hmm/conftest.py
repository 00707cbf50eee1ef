"""Fixtures of the SSV tests."""
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hmm_dir(shared_data) -> Path:
    path = shared_data / "aux" / "hmm"
    if not path.is_dir():
        pytest.skip("aux/hmm oracle data is not present")
    return path
