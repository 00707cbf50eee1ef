"""Readers (PDBQT, PQR, .gpf) and writers (.e.map, .dx) of the grid tool."""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mbgpu.errors import InputFileError
from mbgpu.grid.gpf import GridSpec, parse_gpf, read_gpf
from mbgpu.grid.mapfile import (MapHeader, format_values, header_lines, read_dx, read_map,
                                 write_dx, write_emap)
from mbgpu.grid.receptor import parse_receptor, read_receptor

PDBQT_LINE = "ATOM      1  N   PRO A   1      -5.322 -15.656 -12.341  1.00 38.10     0.017 N "


def test_pdbqt_columns_of_first_atom(oracle):
    rec = oracle("sm").receptor
    assert rec.n_atoms == 150
    first = parse_receptor(PDBQT_LINE + "\n", "x.pdbqt", "pdbqt")
    assert first.coords.tolist() == [[-5.322, -15.656, -12.341]]
    assert first.charges.tolist() == [0.017]


def test_full_receptor_counts(oracle):
    rec = oracle("ddd").receptor
    assert rec.n_atoms == 1842
    assert rec.charges[-1] == -0.003 and rec.coords[-1].tolist() == [-6.401, -11.169, -11.159]


def test_pqr_reads_the_same_atoms(oracle, tmp_path):
    rec = oracle("sm").receptor
    rows = ["ATOM  %5d  CA  ALA A %3d    %8.3f %8.3f %8.3f %7.4f 1.8500" % (i + 1, i + 1, *xyz, q)
            for i, (xyz, q) in enumerate(zip(rec.coords, rec.charges))]
    path = tmp_path / "r.pqr"
    path.write_text("REMARK test\n" + "\n".join(rows) + "\nEND\n")
    pqr = read_receptor(path)
    assert np.array_equal(pqr.coords, rec.coords) and np.array_equal(pqr.charges, rec.charges)


@pytest.mark.parametrize("text, line", [
    ("REMARK x\n" + PDBQT_LINE[:70] + "\n", 2),
    (PDBQT_LINE + "\n" + PDBQT_LINE.replace("-15.656", "-15.6x6") + "\n", 2),
])
def test_pdbqt_errors_name_the_line(text, line):
    with pytest.raises(InputFileError) as exc:
        parse_receptor(text, "bad.pdbqt", "pdbqt")
    assert exc.value.where.line == line and "bad.pdbqt" in exc.value.one_line()


def test_receptor_without_atoms_and_missing_file(tmp_path):
    with pytest.raises(InputFileError, match="no ATOM"):
        parse_receptor("REMARK only\n", "e.pdbqt", "pdbqt")
    with pytest.raises(InputFileError, match="cannot read receptor"):
        read_receptor(tmp_path / "absent.pdbqt")


def test_gpf_of_the_oracles(oracle):
    ddd, const4, sm = oracle("ddd").params, oracle("const4").params, oracle("sm").params
    assert ddd.nelements == (60, 60, 60) and ddd.spacing == 0.375
    assert ddd.center == (2.5, 6.5, -7.5) and ddd.receptor == "hsg1.pdbqt"
    assert ddd.model.distance_dependent and ddd.model.coeff_estat == 0.1406
    assert not const4.model.distance_dependent and const4.model.dielectric == 4.0
    assert sm.model.distance_dependent and sm.nelements == (4, 4, 4)
    assert ddd.elecmap == "hsg1_ddd.e.map" and ddd.gridfld == "hsg1_ddd.maps.fld"


def test_gpf_rules(tmp_path, capsys):
    (tmp_path / "p.dat").write_text("# comment\nFE_coeff_estat 0.25 # weight\n")
    text = ("npts 7 5 4  # odd\nspacing 0.5\ngridcenter auto\nparameter_file p.dat\n"
            "dielectric 0\nmap x.C.map\n")
    path = tmp_path / "g.gpf"
    path.write_text(text)
    p = read_gpf(path)
    assert p.nelements == (6, 4, 4) and "must be even" in capsys.readouterr().err
    assert p.center is None and p.model.coeff_estat == 0.25
    assert not p.model.distance_dependent and p.model.dielectric == 40.0
    spec = p.grid(np.array([1.0, 2.0, 3.0]))
    assert spec.center == (1.0, 2.0, 3.0) and spec.shape_zyx == (5, 5, 7)
    assert spec.origin().tolist() == [-0.5, 1.0, 2.0]


@pytest.mark.parametrize("text, match, line", [
    ("spacing 0.375\n", "no npts", 0),
    ("npts 4 4\n", "three integers", 1),
    ("npts 4 4 4\nspacing abc\n", "cannot read", 2),
    ("npts 4 4 4\nspacing -1\n", "positive", 2),
    ("npts 4 4 4\ngridcenter 1 2\n", "3 numbers", 2),
    ("npts 4 4 4\nparameter_file /nonexistent/x.dat\n", "parameter_file", 2),
])
def test_gpf_errors(text, match, line):
    with pytest.raises(InputFileError, match=match) as exc:
        parse_gpf(text, "bad.gpf")
    assert exc.value.where.line == line


def test_value_formatting_follows_autogrid():
    vals = np.array([-0.0003, -0.0007, 0.00005, -0.00009999, 1.2346, -1.2346, 12.0004, -41.0991])
    assert format_values(vals) == ["0.000", "-0.001", "0.", "0.", "1.235", "-1.235", "12.000", "-41.099"]


def test_header_equals_autogrid(oracle):
    case = oracle("ddd")
    lines = header_lines(case.spec, MapHeader("hsg1_ddd.gpf", "hsg1_ddd.maps.fld", "hsg1.pdbqt"))
    assert lines == case.map_path.read_text().splitlines()[:6]


def test_emap_roundtrip(tmp_path):
    spec = GridSpec((2, 4, 2), 0.5, (1.0, -2.0, 0.25))
    vals = np.linspace(-3, 3, spec.n_points).reshape(spec.shape_zyx)
    path = tmp_path / "m.e.map"
    write_emap(path, vals, spec, MapHeader("g.gpf", "g.fld", "r.pdbqt"))
    header, back = read_map(path)
    assert header["NELEMENTS"] == "2 4 2" and header["CENTER"] == "1.000 -2.000 0.250"
    assert np.allclose(back, vals.ravel(), atol=5e-4)
    assert not list(tmp_path.glob("*.tmp*"))


@settings(max_examples=8, deadline=None)
@given(st.tuples(*[st.integers(0, 3)] * 3), st.floats(0.1, 1.0))
def test_dx_roundtrip_orders_z_fastest(tmp_path_factory, half, h):
    spec = GridSpec(tuple(2 * n for n in half), h, (0.5, -1.0, 2.0))
    rng = np.random.default_rng(7)
    vals = rng.normal(size=spec.shape_zyx)
    path = tmp_path_factory.mktemp("dx") / "m.dx"
    write_dx(path, vals, spec)
    counts, origin, deltas, back = read_dx(path)
    nz, ny, nx = spec.shape_zyx
    assert counts == (nx, ny, nz)
    assert np.allclose(origin, spec.origin()) and np.allclose(deltas, h)
    assert np.allclose(back, vals, rtol=1e-6, atol=1e-12)
    text = Path(path).read_text().splitlines()
    first = [float(v) for v in text[text.index(next(t for t in text if "data follows" in t)) + 1].split()]
    expected = vals.transpose(2, 1, 0).ravel()[:len(first)]  # x slowest, z fastest
    assert np.allclose(first, expected, rtol=1e-6)
