"""`mbgpu align` on the CPU backend: output format, options and one-line errors with status 2."""
import re

import numpy as np
import pytest

from mbgpu.align import align, cigar, rescore
from mbgpu.align.fasta import encode, parse_fasta
from mbgpu.align.matrices import blosum62, load_matrix, parse_ncbi
from mbgpu.cli import main
from mbgpu.errors import InputFileError


def _run(argv, capsys):
    status = main(["align", *argv])
    cap = capsys.readouterr()
    return status, cap.out, cap.err


def test_full_output_of_oracle_pair(nw_dir, capsys):
    status, out, _ = _run([str(nw_dir / "small_random_A.fa"), str(nw_dir / "small_random_B.fa"), "--device", "cpu"],
                          capsys)
    assert status == 0
    assert "score: -328" in out
    cig = (nw_dir / "small_random.parasail_nw_trace_scan_32.cigar").read_text().strip()
    assert "cigar: %s" % cig in out
    assert "identity: " in out
    blocks = [ln for ln in out.splitlines() if ln.startswith("small_random_A ")]
    columns = sum(int(x) for x in re.findall(r"(\d+)[=XID]", cig))
    assert len(blocks) == -(-columns // 60)
    residues = "".join(ln.split()[2] for ln in blocks).replace("-", "")
    seq = "".join(ln.strip() for ln in (nw_dir / "small_random_A.fa").read_text().splitlines()[1:])
    assert residues == seq
    assert all(len(ln.split()[2]) == 60 for ln in blocks[:-1])


def test_score_only_batch_and_out_file(tmp_path, capsys):
    fa, fb = tmp_path / "a.fa", tmp_path / "b.fa"
    fa.write_text(">q1\nHEAGAWGHEE\n>q2\nACDEFGHIKL\nMNPQRSTVWY\n")
    fb.write_text(">t1\nPAWHEAE\n>t2 desc\nACDEFGHIKLMNPQRSTVWYACDEF\n")
    out = tmp_path / "scores.tsv"
    status, stdout, _ = _run([str(fa), str(fb), "--score-only", "--gap", "8", "--device", "cpu", "--out", str(out)],
                             capsys)
    assert status == 0 and stdout == ""
    rows = out.read_text().splitlines()
    assert rows[0].startswith("#name_a")
    assert rows[1].split("\t") == ["q1", "t1", "10", "7", "-8"]
    assert rows[2].split("\t")[:4] == ["q2", "t2", "20", "25"]
    assert int(rows[2].split("\t")[4]) == align("ACDEFGHIKLMNPQRSTVWY", "ACDEFGHIKLMNPQRSTVWYACDEF", gap=8,
                                                 backend="cpu").score


def test_api_matches_parasail():
    parasail = pytest.importorskip("parasail")
    res = align("HEAGAWGHEE", "PAWHEAE", gap=8, backend="cpu")
    assert res.score == parasail.nw_scan_32("HEAGAWGHEE", "PAWHEAE", 8, 8, parasail.blosum62).score
    mat = blosum62()
    a, b = mat.lookup[np.frombuffer(b"HEAGAWGHEE", np.uint8)], mat.lookup[np.frombuffer(b"PAWHEAE", np.uint8)]
    assert rescore(res.ops, a, b, mat.scores, 8) == -8
    assert cigar(res.ops, a, b).endswith("=")


@pytest.mark.parametrize("a_text,b_text,needle", [
    (">e\n\n", ">x\nACD\n", "record 'e' has an empty sequence"),
    (">x\nACDOK\n", ">y\nACD\n", "record 'x': letter 'O' at position 4 is not in the blosum62 alphabet"),
    (">x\nACD\n>z\nKK\n", ">y\nACD\n", "has 2 records but"),
    ("ACD\n", ">y\nACD\n", "sequence data before the first '>' header"),
])
def test_user_errors_are_one_line_status_2(tmp_path, capsys, a_text, b_text, needle):
    fa, fb = tmp_path / "a.fa", tmp_path / "b.fa"
    fa.write_text(a_text)
    fb.write_text(b_text)
    status, _, err = _run([str(fa), str(fb), "--device", "cpu"], capsys)
    assert status == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_bad_gap_and_usage(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">x\nACD\n")
    status, _, err = _run([str(fa), str(tmp_path / "nope.fa")], capsys)
    assert status == 2 and "no such file" in err
    status, _, err = _run([str(fa), str(fa), "--gap", "-1", "--device", "cpu"], capsys)
    assert status == 2 and "gap penalty must be >= 0" in err
    with pytest.raises(SystemExit) as exc:
        main(["align", str(fa)])
    assert exc.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_int32_overflow_refused_for_gpu(tmp_path, capsys):
    fa = tmp_path / "a.fa"
    fa.write_text(">x\nACGT\n")
    status, _, err = _run([str(fa), str(fa), "--gap", str(2**30), "--device", "gpu"], capsys)
    assert status == 2 and "int32 overflow" in err
    status, out, _ = _run([str(fa), str(fa), "--gap", str(2**30), "--device", "cpu", "--score-only",
                           "--matrix", "dna"], capsys)
    assert status == 0 and out.splitlines()[1].endswith("\t20")


def test_matrix_file_and_dna(tmp_path, capsys):
    mfile = tmp_path / "m.txt"
    mfile.write_text("# tiny\n   A  B\nA  2 -1\nB -1  3\n")
    mat = load_matrix(str(mfile))
    assert mat.letters == "AB" and mat.score_of("b", "B") == 3
    fa = tmp_path / "a.fa"
    fa.write_text(">x\nAABB\n")
    status, out, _ = _run([str(fa), str(fa), "--matrix", str(mfile), "--device", "cpu"], capsys)
    assert status == 0 and "score: 10" in out and "cigar: 4=" in out
    fd = tmp_path / "d.fa"
    fd.write_text(">d\nACGTN\n")
    status, out, _ = _run([str(fd), str(fd), "--matrix", "dna:2:-3", "--device", "cpu", "--score-only"], capsys)
    assert status == 0 and out.splitlines()[1].endswith("\t5")  # 4 matches * 2 + N/N = -3
    with pytest.raises(InputFileError):
        parse_ncbi("   A  B\nA  2\n", "bad")
    status, _, err = _run([str(fa), str(fa), "--matrix", "nosuch"], capsys)
    assert status == 2 and "not a built-in matrix" in err


def test_builtin_blosum62_equals_biopython():
    sm = pytest.importorskip("Bio.Align.substitution_matrices")
    bio = sm.load("BLOSUM62")
    mat = blosum62()
    assert len(mat.letters) == 25
    for x in bio.alphabet:
        for y in bio.alphabet:
            assert mat.score_of(x, y) == int(bio[x][y]), (x, y)


def test_fasta_lowercase_and_wrapped_lines():
    recs = parse_fasta(">a first\nac\n\ndE\n;comment\n>b\nK\n", "t.fa")
    assert [(r.name, r.seq, r.line) for r in recs] == [("a", "acdE", 1), ("b", "K", 6)]
    assert encode(recs[0], blosum62()).tolist() == [0, 4, 3, 6]
