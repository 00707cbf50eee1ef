"""Against the shared oracle tables (pyhmmer 0.12.3 / HMMER 3.4) and hmmsearch's pass counts.

SSV and MSV scores must print identically, the F1 pass column must be identical. The tables'
null score was computed in double precision while HMMER (and we) keep it in float, so null,
bits and P are compared to a relative 1e-5 instead.
"""
import numpy as np
import pytest

from mbgpu.hmm.fasta import read_fasta
from mbgpu.hmm.hmmfile import read_hmms
from mbgpu.hmm.profile import byte_profile
from mbgpu.hmm.search import format_rows, header, score_database

from .hmm_util import DB_FILES, MODELS, TABLES, load_table

FAST_ROWS = 400


def _compare(hmm_dir, table, nrows):
    model, dbname = table.split("_vs_")
    want = load_table(hmm_dir / "expected" / ("%s.ssv.tsv" % table))[:nrows]
    db = read_fasta(hmm_dir / DB_FILES[dbname]).subset(len(want))
    res = score_database(byte_profile(read_hmms(hmm_dir / ("%s.hmm" % model))[0]), db)
    head = header().lstrip("#").split("\t")
    got = [dict(zip(head, r.split("\t"))) for r in format_rows(res, db)]
    for g, w in zip(got, want):
        assert (g["model"], g["seq"], g["L"]) == (w["model"], w["seq"], w["L"])
        assert g["ssv_nats"] == w["ssv_nats"], g["seq"]
        assert g["msv_nats"] == w["msv_nats"], g["seq"]
        assert g["pass_F1"] == w["pass_F1"], g["seq"]
        for col, rtol, atol in (("null_nats", 0, 2e-6), ("msv_bits", 0, 2e-4), ("P_msv", 5e-4, 1e-9)):
            np.testing.assert_allclose(float(g[col]), float(w[col]), rtol=rtol, atol=atol, err_msg=col)
    return got


@pytest.mark.parametrize("table", TABLES)
def test_tables_head(hmm_dir, table):
    got = _compare(hmm_dir, table, FAST_ROWS if "SMC_N" not in table else 150)
    assert len(got) > 40


def test_tables_cover_inf_and_no_result(hmm_dir):
    """The oracle rows used above include overflows and SSV 'no result' (MSV fallback) rows."""
    got = _compare(hmm_dir, "SMC_N_vs_HG003687", 150)
    assert any(g["ssv_nats"] == "nan" for g in got)
    inf = _compare(hmm_dir, "globins4_vs_globins45", 50)
    assert all(g["ssv_nats"] == "inf" for g in inf)


@pytest.mark.slow
@pytest.mark.parametrize("table", TABLES)
def test_tables_full(hmm_dir, table):
    _compare(hmm_dir, table, 10**9)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("dbname", ["HG003687", "rand200k"])
def test_hmmsearch_passed_msv_counts(hmm_dir, model, dbname):
    counts = {}
    for line in (hmm_dir / "expected" / "hmmsearch-3.3.2_passed_MSV.txt").read_text().splitlines():
        f = line.split()
        counts[(f[0], f[1].split("_")[0].split(".")[0])] = int(f[5])
    db = read_fasta(hmm_dir / DB_FILES[dbname])
    res = score_database(byte_profile(read_hmms(hmm_dir / ("%s.hmm" % model))[0]), db)
    assert int(res.passed.sum()) == counts[(model, dbname)]
