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


_TWO = "charset a=1-400; partition p=2: a, 401-898; set partition=p;"
_THREE = "charset a=1-300; charset b=301-600; partition p=3: a, b, 601-898; set partition=p;"
_FOUR = "charset a=1-200; charset b=201-400; charset c=401-600; partition p=4: a, b, c, 601-898; set partition=p;"
WARNING_CASES = {
    "one-part-differs": _TWO + "prset ratepr=variable; report applyto=(2) ratemult=ratio; showmodel;",
    "all-alike": _TWO + "report applyto=(1,2) ratemult=ratio; report ratemult=dirichlet;",
    # MrBayes gives the others the first division's format, so a later report can differ again
    "first-format-copied": _THREE + "report applyto=(3) ratemult=ratio; report applyto=(1,2) ratemult=ratio;"
                                    "report applyto=(1) ratemult=ratio; report applyto=(2) ratemult=ratio;",
    "at-link": _THREE + "unlink ratemultiplier=(all); report applyto=(2) ratemult=ratio; link ratemultiplier=(all);"
                        "lset nst=2;",
    "at-prset": _THREE + "prset applyto=(1) ratepr=variable; report applyto=(2) ratemult=ratio;"
                         "prset applyto=(2,3) ratepr=variable;",
    "per-group": _FOUR + "unlink ratemultiplier=(3,4); report applyto=(2,4) ratemult=dirichlet;",
}


def _warnings_by_command(screen_chunks) -> list[tuple[int, list[str]]]:
    """(command number, its ratemult warning lines) for each command that printed one."""
    out = []
    for n, chunk in enumerate(screen_chunks):
        lines = chunk.splitlines()
        got = [ln for i, ln in enumerate(lines) if "Report format for ratemult" in ln
               or (i and "Report format for ratemult" in lines[i - 1])]
        if got:
            out.append((n, got))
    return out


@pytest.mark.parametrize("case", list(WARNING_CASES))
def test_ratemult_format_warning_like_mrbayes(case, mb_double, tmp_path, monkeypatch):
    """MrBayes' warning that shared rate multipliers have different report formats: the same lines after
    the same commands (MrBayes checks, and copies the first division's format, each time it sets up the model)."""
    import io

    from mbgpu.console import Console
    from mbgpu.interpreter import Interpreter

    commands = [c.strip() + ";" for c in WARNING_CASES[case].split(";") if c.strip()]
    (tmp_path / "data.nex").write_text((TEST_DATA / "primates.nex").read_text())
    marked = "".join("%s\nset seed=%d;\n" % (c, 100 + n) for n, c in enumerate(commands))
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\nexecute data.nex;\n%s end;\n" % marked)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    theirs = done.stdout.split("Executing file \"data.nex\"")[-1]
    theirs = [theirs.split("Setting seed to %d" % (100 + n - 1))[-1].split("Setting seed to %d" % (100 + n))[0]
              for n in range(len(commands))]
    monkeypatch.chdir(tmp_path)
    stream = io.StringIO()
    interp = Interpreter(Console(stream))
    interp.run_text("execute data.nex;")
    ours = []
    for c in commands:
        start = len(stream.getvalue())
        interp.run_text(c)
        ours.append(stream.getvalue()[start:])
    assert _warnings_by_command(ours) == _warnings_by_command(theirs)
    if case != "all-alike":
        assert _warnings_by_command(theirs)
