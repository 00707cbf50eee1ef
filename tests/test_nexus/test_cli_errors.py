"""Malformed taxa/characters/skipped blocks through `python -m mbgpu FILE`: one line, exit status 2."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

ROWS = "A ACGTACGT\nB ACGTACGA\nC ACGTTCGA\nD ACGATCGA\n;\nend;\n"
CASES = {
    "taxa_without_taxlabels": (
        "#NEXUS\nbegin taxa;\n  dimensions ntax=4;\nend;\nbegin characters;\n  dimensions nchar=8;\n"
        "  format datatype=dna;\nmatrix\n" + ROWS,
        6, 3, "a characters block takes its taxa from a taxa block, but the taxa block before it has no taxlabels"),
    "characters_without_taxa_or_ntax": (
        "#NEXUS\nbegin characters; dimensions nchar=8; format datatype=dna;\nmatrix\n" + ROWS,
        2, 19, "a characters block takes its taxa from a taxa block, but no taxa block comes before it"),
    "rows_out_of_order": (
        "#NEXUS\nbegin taxa; dimensions ntax=4; taxlabels A B C D; end;\n"
        "begin characters; dimensions nchar=8; format datatype=dna;\nmatrix\n"
        + ROWS.replace("A ACGTACGT\nB", "B ACGTACGT\nA"),
        5, 1, "matrix row 1 is 'B' but the taxa block has 'A' there"),
    "too_few_taxlabels": (
        "#NEXUS\nbegin taxa;\n  dimensions ntax=5;\n  taxlabels A B C D;\nend;\n",
        4, 3, "taxlabels lists 4 taxa but dimensions say ntax=5"),
    "skipped_block_not_closed": (
        "#NEXUS\nbegin taxa; dimensions ntax=4; taxlabels A B C D; end;\n[a comment] begin assumptions;\n"
        "  typeset * untitled = unord: 1-8;\n",
        3, 13, "block 'assumptions' is not closed with end;"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_line_error_and_status_2(name, tmp_path):
    text, line, col, message = CASES[name]
    path = tmp_path / (name + ".nex")
    path.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "mbgpu", str(path)], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("%s:%d:%d: error: %s" % (path, line, col, message)), r.stderr
