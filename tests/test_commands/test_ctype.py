"""`ctype` and `charstat` against MrBayes 3.2.7a (mb-double), and the ordered model's rate matrix.

MrBayes' model takes a ctype in only at the next lset, prset, exclude, include, link, unlink or `set
partition` (measured: a ctype with none of these after it changes nothing); the Gen-0 cases pin that
down, as well as ordered characters under Mk and Mkv and the check of more than 6 states.
"""
import io
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.linalg import expm

from mbgpu.console import Console
from mbgpu.errors import CommandError, ModelError, NotImplementedYet
from mbgpu.interpreter import Interpreter
from mbgpu.models import ModelSpec, build_model
from mbgpu.patterns import standard_state_counts

from tests.test_mrbayes_gen0 import _strip_mrbayes, assert_same_gen0, run_both

DATA = Path(__file__).resolve().parents[1] / "data"
PART = "partition p = 2: 1-166, 167-3246; set partition=p;"


def _cynmix() -> str:
    return _strip_mrbayes((DATA / "cynmix.nex").read_text())


@pytest.mark.parametrize("commands", [
    PART + " ctype ordered: 1-30; lset applyto=(1) coding=all;",
    PART + " ctype ordered: 1-30; lset applyto=(1) coding=variable;",
    PART + " ctype ordered: 1-30;",                                   # never taken in: unordered
    PART + " lset applyto=(1) coding=all; ctype ordered: 1-30;",      # after the last lset: unordered
    PART + " ctype ordered: 1-30; prset applyto=(1) ratepr=fixed;",
    PART + " ctype ordered: 1-30; lset applyto=(2) nst=1;",           # an lset of another division
    PART + " ctype ordered: 1-30; lset applyto=(1) coding=variable; ctype unordered: 1-30;",
    PART + " ctype ordered: 1-30; lset applyto=(1) coding=variable; ctype ordered: 31-60;",
    "ctype ordered: 1-30; exclude 200;",
    "ctype ordered: 1-30; charset x = 1-3;",                          # charset takes nothing in
    "partition p = 2: 1-166, 167-3246; ctype ordered: 1-60; set partition=p;",
    "exclude 166; ctype ordered: 160-166; lset nst=1;",               # the 8-state one is excluded
    "ctype ordered: 1-30; ctype unordered: 1-10; lset nst=1;",
], ids=["mk", "mkv", "pending", "after-lset", "prset", "other-division", "snapshot-kept", "second-pending",
        "exclude", "charset", "set-partition", "excluded-8-states", "two-ctypes"])
def test_ordered_characters_gen0_like_mrbayes(commands, mb_double, tmp_path, monkeypatch):
    want, got = run_both(tmp_path, mb_double, monkeypatch, _cynmix(), commands)
    assert_same_gen0(want, got)


def test_hymfossil_ordered_morphology_like_mrbayes(shared_data, mb_double, tmp_path, monkeypatch):
    """MrBayes' own example: 45 ordered characters, 10 excluded, Mkv, as its mrbayes block sets them."""
    text = (shared_data / "mrbayes" / "hymfossil.nex").read_text()
    lines = re.search(r"(?s)(charset morph_ordered.*?exclude morph_constant;)", text).group(1)
    want, got = run_both(tmp_path, mb_double, monkeypatch, _strip_mrbayes(text), lines)
    assert_same_gen0(want, got)


def _session(tmp_path, commands: str) -> tuple[Interpreter, io.StringIO]:
    (tmp_path / "data.nex").write_text(_cynmix())
    (tmp_path / "cmd.nex").write_text("#NEXUS\nbegin mrbayes;\n execute data.nex;\n %s\nend;\n" % commands)
    out = io.StringIO()
    it = Interpreter(Console(out))
    it.run_file(str(tmp_path / "cmd.nex"))
    return it, out


def test_more_than_six_ordered_states_refused_where_mrbayes_refuses(tmp_path):
    with pytest.raises(ModelError) as err:
        _session(tmp_path, "ctype ordered: 160-166;\n exclude 1;")
    assert "cmd.nex:5:2" in err.value.one_line()           # at the exclude, as MrBayes
    assert "character 166 is ordered and has 8" in err.value.one_line()


@pytest.mark.parametrize("kind", ["dollo", "irreversible", "irr"])
def test_dollo_and_irreversible_refused(kind, tmp_path):
    with pytest.raises(NotImplementedYet, match="ctype %s is not supported yet" % ("irreversible" if kind == "irr"
                                                                                    else kind)):
        _session(tmp_path, "ctype %s: 1-3;" % kind)


@pytest.mark.parametrize("kind, says", [("irreversible", "Irreversible model not yet supported"),
                                        ("dollo", "Chain 1 -- -nan")])
def test_mrbayes_has_no_model_for_dollo_and_irreversible(kind, says, mb_double, tmp_path):
    """Why mbgpu refuses them: once the model takes the ctype in (an lset after it), MrBayes 3.2.7a stops at
    irreversible characters and computes no likelihood (-nan) for dollo ones."""
    (tmp_path / "data.nex").write_text(_cynmix())
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes seed=1 swapseed=1;\n execute data.nex;\n "
        + PART + "\n ctype %s: 1-30;\n lset applyto=(1) coding=variable;\n"
        " mcmc ngen=1 nruns=1 nchains=1 printfreq=1 samplefreq=1 diagnfreq=1 file=x;\nend;\n" % kind)
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert says in done.stdout


def test_usertree_refused_with_mrbayes_reason(tmp_path):
    with pytest.raises(CommandError, match="usertree command deprecated.*startvals"):
        _session(tmp_path, "usertree = (1,2,(3,4));")


def test_pending_ctype_is_said_at_mcmc(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, out = _session(tmp_path, "ctype ordered: 1-30;\n mcmc ngen=1 nruns=1 nchains=1 mcmcdiagn=no "
                                "checkpoint=no filename=o;")
    assert "30 characters set ordered are analysed as unordered" in out.getvalue()


def test_charstat_like_mrbayes(mb_double, tmp_path):
    """Type, states, in/out, MissAmbig (gap and missing count in standard and protein columns, not in DNA
    ones), order and the divisions of every partition, line for line."""
    (tmp_path / "data.nex").write_text(_cynmix())
    (tmp_path / "cmd.nex").write_text(
        "#NEXUS\nbegin mrbayes;\n set autoclose=yes nowarn=yes quitonerror=yes;\n execute data.nex;\n "
        + PART + "\n ctype ordered: 1-30 160;\n exclude 3 170-172;\n charstat;\nend;\n")
    done = subprocess.run([str(mb_double), "cmd.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "cmd.nex"))

    def table(text: str) -> list[str]:
        lines = text.splitlines()
        first = next(i for i, line in enumerate(lines) if "character partitions defined" in line)
        rows = [line for line in lines[first:] if re.match(r"\s+\d+ -- ", line)]
        head = lines[first:first + 10]
        return head + rows
    want, got = table(done.stdout), table(out.getvalue())
    assert len(got) == 10 + 3246
    assert got == want


# A column per case: N, ?, -, {AC} in DNA, RNA and protein (protein's X is missing data in MrBayes), and
# missing=N, where N stays DNA's ambiguity. MissAmbig as MrBayes 3.2.7a's charstat shows it.
MISS_AMBIG = {
    "dna": ("datatype=dna missing=? gap=-", "t1 ACGTAA\nt2 N?-{AC}AA", [1, 0, 0, 1, 0, 0]),
    "rna": ("datatype=rna missing=? gap=-", "t1 ACGUAA\nt2 N?-{AC}AA", [1, 0, 0, 1, 0, 0]),
    "protein": ("datatype=protein missing=? gap=-", "t1 ACDEFG\nt2 X?-{AC}AA", [1, 1, 1, 1, 0, 0]),
    "missing_n": ("datatype=dna missing=N gap=-", "t1 ACGTAA\nt2 N--AAA", [1, 0, 0, 0, 0, 0]),
}


def _miss_ambig_file(fmt: str, rows: str) -> str:
    first = rows.split("\n")[0].split()[1]
    rows += "".join("\nt%d %s" % (i, first.lower()) for i in (3, 4))
    return ("#NEXUS\nbegin data;\ndimensions ntax=4 nchar=6;\nformat %s;\nmatrix\n%s\n;\nend;\n"
            "begin mrbayes; charstat; end;\n" % (fmt, rows))


@pytest.mark.parametrize("name", sorted(MISS_AMBIG))
def test_charstat_miss_ambig_by_datatype(name, tmp_path):
    fmt, rows, want = MISS_AMBIG[name]
    (tmp_path / "in.nex").write_text(_miss_ambig_file(fmt, rows))
    out = io.StringIO()
    Interpreter(Console(out)).run_file(str(tmp_path / "in.nex"))
    got = [int("MissAmbig" in line) for line in out.getvalue().splitlines() if re.match(r"\s+\d+ -- ", line)]
    assert got == want


@pytest.mark.parametrize("name", sorted(MISS_AMBIG))
def test_charstat_miss_ambig_by_datatype_is_mrbayes(name, mb, tmp_path):
    """The expectations above are what MrBayes prints."""
    (tmp_path / "in.nex").write_text(_miss_ambig_file(*MISS_AMBIG[name][:2]))
    done = subprocess.run([str(mb), "in.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    got = [int("MissAmbig" in line) for line in done.stdout.splitlines() if re.match(r"\s+\d+ -- ", line)]
    assert got == MISS_AMBIG[name][2]


def test_ordered_rate_matrix_is_mrbayes_set_std_q_matrix():
    """Adjacent states only, equal frequencies, mean rate 1; P(t) = expm(Q t) built independently here."""
    for k in (3, 4, 6):
        model = build_model(ModelSpec(datatype="standard", n_states=k, ordered=True))
        q = np.zeros((k, k))
        for i in range(k - 1):
            q[i, i + 1] = q[i + 1, i] = 1.0
        np.fill_diagonal(q, -q.sum(axis=1))
        q /= -np.mean(np.diag(q))
        np.testing.assert_allclose(model.q, q, atol=1e-14)
        for t in (0.01, 0.3, 2.0):
            np.testing.assert_allclose(model.transition_matrices(np.array([t]))[0, 0], expm(q * t), atol=1e-12)
    with pytest.raises(ModelError):
        ModelSpec(datatype="standard", n_states=7, ordered=True).validate()


# Standard data whose cells include written sets of every symbol: MrBayes counts such a set (k = 10)
# where '?' and '-' say nothing about k (mbgpu once took the set for missing data, k = 2).
EVERY_STATE = """#NEXUS
begin data;
  dimensions ntax=5 nchar=6;
  format datatype=standard missing=? gap=-;
  matrix
    A 0{0123456789}1011
    B 1010{0123456789}1
    C 01?110
    D 1-0101
    E 001{01}10
  ;
end;
"""


def test_set_of_every_state_counts_for_k(tmp_path):
    it = Interpreter(Console(io.StringIO()))
    (tmp_path / "k.nex").write_text(EVERY_STATE + "begin mrbayes; charstat; end;\n")
    it.run_file(str(tmp_path / "k.nex"))
    m = it.settings.matrix
    assert standard_state_counts(m.masks, np.arange(6), 10, m.blank).tolist() == [2, 10, 2, 2, 10, 2]


@pytest.mark.parametrize("commands", ["lset coding=all;", "lset coding=variable;"])
def test_set_of_every_state_gen0_like_mrbayes(commands, mb_double, tmp_path, monkeypatch):
    want, got = run_both(tmp_path, mb_double, monkeypatch, EVERY_STATE, commands)
    assert_same_gen0(want, got)
