"""Fixtures of the grid tests: the AutoGrid oracle folder and its parsed inputs."""
from pathlib import Path

import numpy as np
import pytest

from mbgpu.grid.gpf import read_gpf
from mbgpu.grid.mapfile import read_map
from mbgpu.grid.receptor import read_receptor

ORACLE_MAPS = {"sm": ("hsg1_sm.gpf", "hsg1_sm.e.map"),
               "ddd": ("hsg1_ddd.gpf", "hsg1_ddd.e.map"),
               "const4": ("hsg1_const4.gpf", "hsg1_const4.e.map")}


@pytest.fixture(scope="session")
def grid_dir(shared_data) -> Path:
    """The AutoGrid oracle folder, ../shared/data/aux/grid (MBGPU_SHARED points at a copy elsewhere)."""
    path = shared_data / "aux" / "grid"
    if not path.is_dir():
        pytest.skip("aux/grid oracle data is absent")
    return path


class Case:
    """One AutoGrid oracle: parameters, receptor, grid, and the map AutoGrid wrote."""

    def __init__(self, grid_dir: Path, key: str):
        gpf, emap = ORACLE_MAPS[key]
        self.key = key
        self.gpf_path = grid_dir / gpf
        self.map_path = grid_dir / emap
        self.params = read_gpf(self.gpf_path)
        self.receptor_path = grid_dir / self.params.receptor
        self.receptor = read_receptor(self.receptor_path)
        self.spec = self.params.grid(self.receptor.mean())
        self.header, self.values = read_map(self.map_path)
        self.lines = self.map_path.read_text().splitlines()[6:]


@pytest.fixture(scope="session")
def oracle(grid_dir):
    """oracle(key) -> Case for 'sm', 'ddd' or 'const4' (parsed once per session)."""
    cache = {}

    def get(key: str) -> Case:
        if key not in cache:
            cache[key] = Case(grid_dir, key)
        return cache[key]
    return get


def subset_indices(n_points: int, n: int = 4000) -> np.ndarray:
    """A deterministic spread of grid points: every k-th point, offset so both ends vary."""
    step = max(1, n_points // n)
    return np.arange(step // 3, n_points, step, dtype=np.int64)


@pytest.fixture(scope="session")
def subset():
    """subset(n_points, n=4000) -> deterministic flat indices of about n points."""
    return subset_indices
