"""CUDA kernels against AutoGrid's maps and against the numpy reference (needs a GPU)."""
import numpy as np
import pytest

from mbgpu.grid.dielectric import ElectrostaticModel
from mbgpu.grid.gpf import GridSpec
from mbgpu.grid.reference import grid_points, potential_grid

pytestmark = pytest.mark.gpu
TOL = 0.0015


@pytest.fixture(scope="module")
def dev():
    from mbgpu.cuda.context import open_device

    d = open_device()
    with d:
        yield d


SOURCES = ("shared", "constant")


@pytest.fixture(scope="module")
def grids(dev):
    from mbgpu.cuda.coulomb import CoulombGrid, KernelShape

    return {(mode, src): CoulombGrid(dev, KernelShape(atom_src=src), ddd_mode=mode)
            for mode in ("table", "closed") for src in SOURCES}


@pytest.mark.parametrize("src", SOURCES)
@pytest.mark.parametrize("key, mode", [("sm", "table"), ("ddd", "table"), ("ddd", "closed"),
                                       ("const4", "table"), ("sm", "closed")])
def test_gpu_equals_autogrid_and_reference(grids, oracle, subset, key, mode, src):
    case = oracle(key)
    gpu = grids[(mode, src)].compute(case.receptor.coords, case.receptor.charges, case.spec,
                                     case.params.model)
    assert gpu.shape == case.spec.shape_zyx
    worst = float(np.max(np.abs(gpu.ravel() - case.values)))
    print("%s/%s/%s: max |gpu - autogrid| = %.5f" % (key, mode, src, worst))
    assert worst <= TOL
    idx = subset(case.spec.n_points, 2000)
    ref = potential_grid(case.spec, case.receptor.coords, case.receptor.charges, case.params.model, idx)
    assert np.max(np.abs(gpu.ravel()[idx] - ref)) <= 2e-4


@pytest.mark.parametrize("src", SOURCES)
@pytest.mark.parametrize("ddd, mode", [(True, "table"), (True, "closed"), (False, "table")])
def test_tiles_slabs_and_edge_atoms(dev, ddd, mode, src):
    from mbgpu.cuda.coulomb import CoulombGrid, KernelShape

    rng = np.random.default_rng(11)
    spec = GridSpec((38, 22, 14), 0.6, (3.0, -2.0, 1.0))
    n = 9001                                   # three constant-memory tiles, the last one short
    coords = np.asarray(spec.center) + rng.uniform(-15, 15, (n, 3))
    coords[0] = np.asarray(spec.center) + grid_points(spec, np.array([777]))[0]   # r = 0
    coords[1] = np.asarray(spec.center) + [170.0, 5.0, 0.0]                       # beyond the table
    charges = rng.uniform(-0.5, 0.5, n)
    model = ElectrostaticModel(ddd, 4.0, 0.1406)
    nz, ny, nx = spec.shape_zyx
    grid = CoulombGrid(dev, KernelShape(atom_src=src), ddd_mode=mode,
                       slab_bytes=8 * nx * ny * 4)                           # 4 planes per slab
    gpu = grid.compute(coords, charges, spec, model)
    ref = potential_grid(spec, coords, charges, model)
    diff = np.abs(gpu - ref)
    print("tiles/slabs ddd=%s %s %s: max diff %.2e (max |E| %.1f)" % (ddd, mode, src, diff.max(), np.abs(ref).max()))
    assert diff.max() <= 1e-3 + 1e-6 * np.abs(ref).max()


def test_cli_on_gpu_writes_autogrid_file(grid_dir, tmp_path, monkeypatch):
    import shutil

    from mbgpu.grid.cli import main

    for name in ("hsg1_sm.gpf", "hsg1_sm.pdbqt", "AD4.1_bound.dat"):
        shutil.copy(grid_dir / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    from mbgpu.grid.mapfile import read_map

    assert main(["hsg1_sm.pdbqt", "hsg1_sm.gpf", "--backend", "gpu", "-q"]) == 0
    ours, theirs = tmp_path / "hsg1_sm.e.map", grid_dir / "hsg1_sm.e.map"
    assert ours.read_text().splitlines()[:6] == theirs.read_text().splitlines()[:6]
    assert np.max(np.abs(read_map(ours)[1] - read_map(theirs)[1])) <= TOL
