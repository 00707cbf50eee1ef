"""Readers and the command line: formats, gzip, several models per file, one-line user errors."""
import gzip

import numpy as np
import pytest

from mbgpu.cli import main as mbgpu_main
from mbgpu.errors import InputFileError
from mbgpu.hmm.alphabet import PAD
from mbgpu.hmm.fasta import read_fasta
from mbgpu.hmm.hmmfile import read_hmms


def test_fasta_plain_and_gzip_pack_to_words(tmp_path):
    text = b">a desc\nACDx*\nB\n>b\n\nWY-.\n"
    (tmp_path / "s.fa").write_bytes(text)
    (tmp_path / "s.fa.gz").write_bytes(gzip.compress(text))
    for name in ("s.fa", "s.fa.gz"):
        db = read_fasta(tmp_path / name)
        assert db.names == ["a", "b"]
        np.testing.assert_array_equal(db.lengths, [6, 4])
        np.testing.assert_array_equal(db.sequence(0), [0, 1, 2, 26, 27, 21])
        np.testing.assert_array_equal(db.sequence(1), [18, 19, 20, 20])
        assert db.offsets.dtype == np.int64 and list(db.offsets) == [0, 8]
        assert list(db.codes[6:8]) == [PAD, PAD]


def test_fasta_bad_residue_names_line(tmp_path):
    (tmp_path / "bad.fa").write_text(">a\nACD\n>b\nAC1D\n")
    with pytest.raises(InputFileError) as err:
        read_fasta(tmp_path / "bad.fa")
    assert "bad.fa:3" in err.value.one_line() and "'1'" in err.value.one_line()


def test_several_models_per_file(hmm_dir, tmp_path):
    both = (hmm_dir / "globins4.hmm").read_text() + (hmm_dir / "fn3.hmm").read_text()
    (tmp_path / "two.hmm.gz").write_bytes(gzip.compress(both.encode()))
    models = read_hmms(tmp_path / "two.hmm.gz")
    assert [(m.name, m.M) for m in models] == [("globins4", 149), ("fn3", 86)]
    assert models[1].msv_mu == pytest.approx(-9.4043) and models[1].msv_lambda == pytest.approx(0.71847)


def test_truncated_hmm_is_a_user_error(hmm_dir, tmp_path):
    lines = (hmm_dir / "fn3.hmm").read_text().splitlines()[:60]
    (tmp_path / "cut.hmm").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError):
        read_hmms(tmp_path / "cut.hmm")


def test_cli_writes_table_like_oracle(hmm_dir, tmp_path, capsys):
    out = tmp_path / "hits.tsv"
    rc = mbgpu_main(["ssv", str(hmm_dir / "globins4.hmm"), str(hmm_dir / "globins45.fa"),
                     "--out", str(out), "--backend", "cpu"])
    assert rc == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "#model\tseq\tL\tssv_nats\tmsv_nats\tnull_nats\tmsv_bits\tP_msv\tpass_F1"
    assert len(rows) == 46 and rows[1].startswith("globins4\tMYG_ESCGI\t153\tinf\tinf\t")


@pytest.mark.parametrize("argv,needle", [
    (["ssv", "/nonexistent.hmm", "x.fa"], "nonexistent.hmm"),
    (["ssv", "A.hmm"], "ssv:"),
    (["ssv", "A.hmm", "B.fa", "--F1", "0"], "--F1"),
])
def test_cli_user_errors_are_one_line(argv, needle, capsys):
    assert mbgpu_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err
