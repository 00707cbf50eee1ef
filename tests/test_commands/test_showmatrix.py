"""`showmatrix` against MrBayes 3.2.7a, byte for byte, and the gap/missing codes it needs.

MrBayes prints each cell from its stored code: IUPAC letters for DNA/RNA state sets (U as T), `*` for a
protein or standard set, a blank for the sets its printer has no symbol for (every amino acid, a set with
V, a standard set with state 9), `?` for missing data (protein X too), `-` for gaps; every taxon and
character, deleted and excluded ones too, in blocks of 50.
"""
import re
import subprocess

import numpy as np
import pytest

from mbgpu.commands.showmatrix import matrix_lines
from mbgpu.datatypes import GAP, MISSING, STATES
from tests.conftest import TEST_DATA
from tests.helpers import interp_for, output


def _data(ntax: int, nchar: int, fmt: str, rows: str, commands: str = "") -> str:
    return ("#NEXUS\nbegin data;\ndimensions ntax=%d nchar=%d;\nformat %s;\nmatrix\n%s\n;\nend;\n"
            "begin mrbayes; %s showmatrix; end;\n" % (ntax, nchar, fmt, rows, commands))


FMT = "missing=? gap=-"
CASES = {
    "dna_sets": _data(4, 20, "datatype=dna " + FMT, "Alpha   ACGTRYMKSWHBVDNN?-ac\n"
                      "B       {AG}(CT){ACGT}{AC}(AT)ugtN?-NACGTACGT\nGamma_long ACGTACGTACGTACGTACGT\n"
                      "D       ACGTACGTACGTACGTACG{GT}"),
    "standard_polymorphisms": _data(4, 16, "datatype=standard " + FMT,
                                    "t1 01?-{01}(12)9{0123456789}{012345678}0{13}1{09}(19){0 1}9\n"
                                    "t2 0123456789010123\nt3 0000000000000000\nt4 1111111111111111"),
    "protein": _data(4, 8, "datatype=protein " + FMT, "t1 ACDEFGHI\nt2 X?-{AC}{ACDEFGHIKLMNPQRSTVWY}(RN){AV}x\n"
                     "t3 ACDEFGVV\nt4 acdefgvw"),
    "rna": _data(4, 6, "datatype=rna " + FMT, "t1 ACGUTN\nt2 ACGU{UC}?\nt3 ACGUUU\nt4 ACGUU-"),
    "missing_is_n": _data(4, 6, "datatype=dna missing=N gap=-", "t1 ACGTN-\nt2 ACGTRA\nt3 ACGTAA\nt4 ACGTAA"),
    "gap_is_dot": _data(4, 6, "datatype=dna gap=. missing=?", "t1 ACGT.?\nt2 ACGTRA\nt3 ACGTAA\nt4 ACGTAA"),
    "matchchar_interleaved": _data(4, 8, "datatype=dna %s matchchar=. interleave=yes" % FMT,
                                   "t1 A?{AG}T\nt2 ....\nt3 .C.-\nt4 N...\n\n"
                                   "t1 AAAA\nt2 ..C.\nt3 ....\nt4 ...."),
    "deleted_and_excluded": _data(5, 6, "datatype=dna " + FMT, "t1 ACGTAA\nt2 ACGTAC\nt3_long ACGTAG\n"
                                  "t4 ACGTAT\nt5 ACGTCC", "delete t3_long; exclude 2-3;"),
    "mixed": _data(4, 8, "datatype=mixed(standard:1-3,protein:4-5,dna:6-8) " + FMT,
                   "t1 0{12}?AX-CN\nt2 1-2{KR}?AC{CT}\nt3 012AAAAA\nt4 210CCCCC"),
}

# What MrBayes 3.2.7a printed for some of CASES (mb, run once; test_matches_mrbayes checks them all live).
MRBAYES_PRINTED = {
    "dna_sets": ["                  1",
                 "      Alpha       ACGTRYMKSWHBVDNN?-AC",
                 "      B           RYNMWTGTN?-NACGTACGT",
                 "      Gamma_long  ACGTACGTACGTACGTACGT",
                 "      D           ACGTACGTACGTACGTACGK", ""],
    "standard_polymorphisms": ["          1",
                               "      t1  01?-**9 *0*1  *9",
                               "      t2  0123456789010123",
                               "      t3  0000000000000000",
                               "      t4  1111111111111111", ""],
    "protein": ["          1", "      t1  ACDEFGHI", "      t2  ??-* * ?", "      t3  ACDEFGVV",
                "      t4  ACDEFGVW", ""],
    "rna": ["          1", "      t1  ACGTTN", "      t2  ACGTY?", "      t3  ACGTTT", "      t4  ACGTT-", ""],
    "matchchar_interleaved": ["          1", "      t1  A?RTAAAA", "      t2  A?RTAACA", "      t3  ACR-AAAA",
                              "      t4  N?RTAAAA", ""],
    "mixed": ["          1", "      t1  0*?A?-CN", "      t2  1-2*?ACY", "      t3  012AAAAA", "      t4  210CCCCC", ""],
}

_HEAD = re.compile(r"^ +1$")


def _ours(text: str, tmp_path) -> list[str]:
    """mbgpu's showmatrix lines: its screen from the first block's header on."""
    lines = output(interp_for(text, tmp_path)).split("\n")
    return lines[next(i for i, line in enumerate(lines) if _HEAD.match(line)):-1]


def _mrbayes(mb, text: str, tmp_path) -> list[str]:
    """MrBayes' showmatrix lines: its screen in the mrbayes block from the first block's header on."""
    (tmp_path / "mb.nex").write_text(text)
    done = subprocess.run([str(mb), "mb.nex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:]
    lines = done.stdout.split("\n")
    end = lines.index("   Exiting mrbayes block")
    first = next(i for i, line in enumerate(lines[:end]) if _HEAD.match(line))
    return lines[first:end]


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_mrbayes(name, mb, tmp_path):
    assert _ours(CASES[name], tmp_path) == _mrbayes(mb, CASES[name], tmp_path)


def _with_showmatrix(path, end: str = "end;") -> str:
    """A bundled file with `showmatrix;` as the last command of its mrbayes block (or a block of its own)."""
    text = path.read_text().replace("\r\n", "\n")
    if "begin mrbayes;" not in text.lower():
        return text + "\nbegin mrbayes; showmatrix; end;\n"
    cut = text.lower().rindex(end)
    return text[:cut] + "showmatrix;\n" + text[cut:]


@pytest.mark.parametrize("name", ["primates.nex", "cynmix.nex"])
def test_bundled_files_match_mrbayes(name, mb, tmp_path):
    text = _with_showmatrix(TEST_DATA / name)
    ours = _ours(text, tmp_path)
    assert len(ours) > 200 and ours == _mrbayes(mb, text, tmp_path)


@pytest.mark.parametrize("name", sorted(MRBAYES_PRINTED))
def test_prints_what_mrbayes_printed(name, tmp_path):
    """Needs no ../shared: the lines MrBayes printed for these cases, kept here."""
    assert _ours(CASES[name], tmp_path) == MRBAYES_PRINTED[name]


def test_primates_layout(tmp_path):
    """Blocks of 50 headed by their first character's number, names padded to the longest plus two."""
    lines = matrix_lines(interp_for(_with_showmatrix(TEST_DATA / "primates.nex"), tmp_path).settings.matrix)
    heads = [line.strip() for line in lines if re.match(r"^ +\d+$", line)]
    assert heads == [str(n) for n in range(1, 899, 50)] and len(lines) == 18 * (1 + 12 + 1)
    assert lines[1] == "      Tarsius_syrichta  AAGTTTCATTGGAGCCACCACTCTTATAATTGCCCATGGCCTCACCTCCT"
    assert lines[-2] == "      Saimiri_sciureus  AAACTGACACTGAATAACTATCCAAACCATCAAACTATCCCTAAGCTT"
    assert lines[0] == " " * 24 + "1"


def test_blank_codes_tell_gap_missing_and_ambiguity_apart(tmp_path):
    """The same mask (every state) for N, ? and -, different codes; protein's X is missing data."""
    m = interp_for(CASES["mixed"], tmp_path).settings.matrix
    assert m.masks[0, 7] == m.masks[0, 1 + 4] == 15
    assert m.blank[0].tolist() == [STATES, STATES, MISSING, STATES, MISSING, GAP, STATES, STATES]
    assert m.blank[1, 1] == GAP and m.blank[1, 4] == MISSING


def test_deleted_taxa_view_keeps_the_codes(tmp_path):
    from mbgpu.deleted_taxa import analysis_settings
    it = interp_for(CASES["deleted_and_excluded"].replace("t2 ACGTAC", "t2 AC-?AC"), tmp_path)
    view = analysis_settings(it.settings, for_run=False).matrix
    assert view.taxa == ["t1", "t2", "t4", "t5"] and view.blank.shape == view.masks.shape
    assert np.array_equal(view.blank[1, 2:4], [GAP, MISSING])


def test_needs_a_matrix(tmp_path):
    from mbgpu.errors import CommandError
    with pytest.raises(CommandError, match="showmatrix needs a data matrix"):
        interp_for("#NEXUS\nbegin mrbayes; showmatrix; end;\n", tmp_path)
