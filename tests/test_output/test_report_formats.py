"""`report tratio|revmat|ratemult` against MrBayes 3.2.7a (mb-double): the `.p` header and Gen-0 row of a
run in those formats, and the formats' formulas on MrBayes' own samples (two MrBayes runs with one
`report` command each follow the same chain; the default-format one, converted by mbgpu, must give the
other's rows)."""
import subprocess

import numpy as np
import pytest

from mbgpu.output import report_formats
from tests.conftest import TEST_DATA
from tests.test_mrbayes_gen0 import _strip_mrbayes, assert_same_gen0, run_both

_MODEL = ("charset c1 = 1-.\\3; charset c2 = 2-.\\3; charset c3 = 3-.\\3; partition p = 3: c1, c2, c3;"
          " set partition=p; lset applyto=(1) nst=2; lset applyto=(2,3) nst=6; prset ratepr=variable;")


def _pfile(folder, name: str, report: str, mb_double) -> tuple[list[str], np.ndarray]:
    (folder / (name + ".nex")).write_text(
        "#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes seed=3 swapseed=4;\n execute primates.nex;\n"
        " %s\n %s\n mcmc ngen=600 nruns=1 nchains=1 printfreq=100 samplefreq=50 diagnfreq=100 file=%s;\nend;\n"
        % (_MODEL, report, name))
    done = subprocess.run([str(mb_double), name + ".nex"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    lines = (folder / (name + ".p")).read_text().splitlines()
    return lines[1].split("\t"), np.array([[float(x) for x in ln.split("\t")] for ln in lines[2:]])


def _columns(header: list[str], start: str, n: int) -> slice:
    first = next(i for i, h in enumerate(header) if h.startswith(start))
    return slice(first, first + n)


@pytest.mark.parametrize("fmt", ["Dirichlet", "Ratio"])
def test_formats_convert_mrbayes_samples_as_mrbayes_writes_them(fmt, mb_double, tmp_path):
    (tmp_path / "primates.nex").write_text((TEST_DATA / "primates.nex").read_text())
    head, plain = _pfile(tmp_path, "plain", "report tratio=ratio;", mb_double)
    report = ("report tratio=dirichlet revmat=ratio ratemult=dirichlet;" if fmt == "Dirichlet" else
              "report ratemult=ratio;")
    want_head, want = _pfile(tmp_path, "other", report, mb_double)
    assert len(plain) == len(want) and np.array_equal(plain[:, 1], want[:, 1])    # the same chain
    got = plain.copy()
    mult = _columns(head, "m{", 3)
    got[:, mult] = [report_formats.values("ratemult", fmt, row) for row in plain[:, mult]]
    if fmt == "Dirichlet":
        kappa, rates = _columns(head, "kappa", 1), _columns(head, "r(A<->C)", 6)
        got = np.insert(got, kappa.stop, 0.0, axis=1)
        got[:, kappa.start:kappa.stop + 1] = [report_formats.values("tratio", fmt, np.array([k, 1.0]))
                                              for k in plain[:, kappa.start]]
        rates = slice(rates.start + 1, rates.stop + 1)
        got[:, rates] = [report_formats.values("revmat", "Ratio", row) for row in got[:, rates]]
    assert np.allclose(got, want, rtol=2e-6, atol=0)


def test_header_and_gen0_like_mrbayes(mb_double, tmp_path, monkeypatch):
    """Formats taken from each parameter's first division: kappa{1,2} and the multipliers follow division
    1 (MrBayes warns that ratemult's format varies), revmat{3} division 3's."""
    data = _strip_mrbayes((TEST_DATA / "primates.nex").read_text())
    commands = (_MODEL.replace("applyto=(1) nst=2; lset applyto=(2,3)", "applyto=(1,2) nst=2; lset applyto=(3)")
                + " report applyto=(1) tratio=dirichlet ratemult=ratio; report applyto=(2) ratemult=dirichlet"
                " revmat=ratio; report applyto=(3) revmat=ratio; startvals ratemultiplier=(1.5,0.8,0.7);")
    want, got = run_both(tmp_path, mb_double, monkeypatch, data, commands)
    assert_same_gen0(want, got)
    assert "ti{1,2}" in got[0] and all(got[1][k] == want[1][k] for k in want[0][3:])
