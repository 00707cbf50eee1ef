"""`mbgpu potential`: the whole file equals AutoGrid's, options, and one-line errors."""
import shutil

import numpy as np
import pytest

from mbgpu.cli import main as mbgpu_main
from mbgpu.grid.cli import main
from mbgpu.grid.mapfile import read_dx, read_map


@pytest.fixture
def workdir(tmp_path, grid_dir, monkeypatch):
    for name in ("hsg1_sm.gpf", "hsg1_sm.pdbqt", "AD4.1_bound.dat"):
        shutil.copy(grid_dir / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_small_map_file_is_byte_identical(workdir, grid_dir, capsys):
    assert main(["hsg1_sm.pdbqt", "hsg1_sm.gpf", "--backend", "cpu", "--dx"]) == 0
    out = capsys.readouterr().out
    assert "hsg1_sm.e.map" in out and "5x5x5 points, 150 atoms" in out
    assert (workdir / "hsg1_sm.e.map").read_text() == (grid_dir / "hsg1_sm.e.map").read_text()
    counts, origin, _, vals = read_dx(workdir / "hsg1_sm.dx")
    _, ref = read_map(grid_dir / "hsg1_sm.e.map")
    assert counts == (5, 5, 5) and np.allclose(origin, [1.75, 5.75, -8.25])
    assert np.allclose(vals.ravel(), ref, atol=5e-4)


def test_output_option_and_quiet(workdir, capsys):
    assert main(["hsg1_sm.pdbqt", "hsg1_sm.gpf", "-o", "sub.e.map", "--backend", "cpu", "-q"]) == 0
    assert capsys.readouterr().out == ""
    header, vals = read_map(workdir / "sub.e.map")
    assert header["MACROMOLECULE"] == "hsg1_sm.pdbqt" and vals.size == 125


def test_errors_are_one_line_with_status_2(workdir, capsys):
    assert mbgpu_main(["potential", "absent.pdbqt", "hsg1_sm.gpf", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "absent.pdbqt" in err and "\n" not in err
    (workdir / "bad.gpf").write_text("npts 4 4 four\n")
    assert mbgpu_main(["potential", "hsg1_sm.pdbqt", "bad.gpf"]) == 2
    assert capsys.readouterr().err.strip().startswith("bad.gpf:1:1: error:")
    assert main(["hsg1_sm.pdbqt"]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["hsg1_sm.pdbqt", "hsg1_sm.gpf", "--backend", "tpu"]) == 2
