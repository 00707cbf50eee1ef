"""Gen-0 rows of mbgpu against the real MrBayes, run at test time on the same command file.

MrBayes' example data (mrbayes blocks stripped), a fixed user tree with branch lengths set by
`startvals`, one generation of one chain: the Gen-0 LnL and LnPr of mb-double (MrBayes 3.2.7a in
double precision) and of mbgpu must agree to 1e-6. Checked: the default coding of standard data
(Mkv, `coding=variable`, its constant characters excluded), the gammadir branch-length prior with
a != 1 and c != 1, and the equalin amino-acid model with the default state-frequency prior.
"""
import io
import re
import subprocess

import numpy as np
import pytest

from mbgpu.console import Console
from mbgpu.interpreter import Interpreter

TOL = 1e-6


def _strip_mrbayes(text: str) -> str:
    return re.sub(r"(?is)begin\s+mrbayes\s*;.*?end\s*;", "", text)


def _taxa(text: str) -> list[str]:
    """Taxon names in matrix order (interleaved rows name each taxon again; comments are skipped)."""
    body = re.sub(r"\[.*?\]", "", re.search(r"(?is)\bmatrix\b(.*?);", text).group(1), flags=re.S)
    names: list[str] = []
    for line in body.splitlines():
        words = line.split()
        if words and words[0] not in names:
            names.append(words[0])
    return names


def _user_tree(names: list[str], seed: int = 7) -> str:
    """A random unrooted tree (basal trichotomy) with branch lengths between 0.005 and 0.2."""
    rng = np.random.default_rng(seed)
    nodes = ["%s:%.6f" % (n, rng.uniform(0.01, 0.2)) for n in names]
    rng.shuffle(nodes)
    while len(nodes) > 3:
        i, j = sorted(rng.choice(len(nodes), 2, replace=False))
        b, a = nodes.pop(j), nodes.pop(i)
        nodes.append("(%s,%s):%.6f" % (a, b, rng.uniform(0.005, 0.1)))
    return "(%s);" % ",".join(nodes)


def _write_case(folder, data_text: str, commands: str) -> None:
    folder.mkdir()
    tree = _user_tree(_taxa(data_text))
    (folder / "data.nex").write_text(data_text + "\nbegin trees;\n  tree fixed = %s\nend;\n" % tree)
    (folder / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n"
        "  set autoclose=yes nowarn=yes quitonerror=yes seed=1 swapseed=1 precision=15 scientific=no;\n"
        "  execute data.nex;\n"
        "  %s\n"
        "  startvals tau=fixed V=fixed;\n"
        "  mcmc ngen=1 nchains=1 nruns=1 samplefreq=1 printfreq=1 mcmcdiagn=no checkpoint=no filename=out;\n"
        "end;\n" % commands)


def _gen0(pfile) -> tuple[list[str], dict[str, str]]:
    lines = pfile.read_text().splitlines()
    header, row = lines[1].split("\t"), lines[2].split("\t")
    assert row[0] == "0"
    return header, dict(zip(header, row))


def run_both(tmp_path, mb_double, monkeypatch, data_text: str, commands: str = ""):
    """(MrBayes' Gen-0 header and row, mbgpu's) for one command file."""
    for side in ("mb", "mbgpu"):
        _write_case(tmp_path / side, data_text, commands)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path / "mb", capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    monkeypatch.chdir(tmp_path / "mbgpu")
    Interpreter(Console(io.StringIO())).run_file("cmd.nex")
    return _gen0(tmp_path / "mb" / "out.p"), _gen0(tmp_path / "mbgpu" / "out.p")


def assert_same_gen0(want, got) -> None:
    (want_header, want_row), (got_header, got_row) = want, got
    assert got_header == want_header
    for col in ("LnL", "LnPr"):
        assert abs(float(got_row[col]) - float(want_row[col])) < TOL, (col, got_row[col], want_row[col])


def _data(shared_data, name: str) -> str:
    return _strip_mrbayes((shared_data / "mrbayes" / (name + ".nex")).read_text())


@pytest.mark.parametrize("name", ["cynmix", "hym", "kim", "hymfossil"])
def test_standard_data_defaults_to_mkv_like_mrbayes(name, shared_data, mb_double, tmp_path, monkeypatch):
    """No `lset coding`: MrBayes codes standard divisions as Variable (Mkv, constant characters
    excluded) and DNA, RNA and protein divisions as All; hym and hymfossil have constant characters."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _data(shared_data, name))
    assert_same_gen0(want, got)


@pytest.mark.parametrize("name, commands", [("hym", "lset coding=all;"), ("kim", "lset coding=variable;")],
                         ids=["coding-all-on-standard", "coding-variable-on-all-datatypes"])
def test_explicit_coding_like_mrbayes(name, commands, shared_data, mb_double, tmp_path, monkeypatch):
    """`lset coding=all` is honoured on standard data; coding applies to standard divisions only
    (MrBayes skips the DNA, RNA and protein divisions of kim silently)."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _data(shared_data, name), commands)
    assert_same_gen0(want, got)


@pytest.mark.parametrize("args", ["2,0.5,1.5,0.7", "1,0.1,0.3,2.5", "3,2,4,0.2", "1,1,0.7,0.5"])
def test_gammadir_prior_like_mrbayes(args, shared_data, mb_double, tmp_path, monkeypatch):
    """gammadir(aT,bT,a,c) with a != 1 and c != 1: terminal proportions Dirichlet(a), internal a*c."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _data(shared_data, "sceloporus"),
                         "prset brlenspr=unconstrained:gammadir(%s);" % args)
    assert_same_gen0(want, got)


def test_equalin_with_the_default_frequency_prior_like_mrbayes(shared_data, mb_double, tmp_path, monkeypatch):
    """aamodelpr=fixed(equalin): 20 free frequencies under MrBayes' default all-ones Dirichlet."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _data(shared_data, "avian_ovomucoids"),
                         "prset aamodelpr=fixed(equalin);")
    assert_same_gen0(want, got)


def test_rate_multiplier_prior_counts_only_the_characters_kept_under_mkv(shared_data, mb_double, tmp_path,
                                                                          monkeypatch):
    """ratepr=variable weighs each division by its character count; under Mkv MrBayes counts only the
    characters it keeps (hym: 11 of the 200 standard ones are incompatible with the coding bias)."""
    want, got = run_both(tmp_path, mb_double, monkeypatch, _data(shared_data, "hym"),
                         "charset morph=1-200; charset mol=201-510; partition p=2:morph,mol; set partition=p;"
                         " prset ratepr=variable;")
    assert_same_gen0(want, got)
