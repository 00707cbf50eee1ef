"""Fixtures of the alignment tests: the NW oracle pairs from ../shared/data/aux/nw."""
import json
from pathlib import Path

import pytest

from mbgpu.align.fasta import encode, read_fasta
from mbgpu.align.matrices import blosum62


@pytest.fixture(scope="session")
def nw_dir(shared_data) -> Path:
    """The oracle folder (../shared/data/aux/nw; MBGPU_SHARED points at a copy of shared/ elsewhere)."""
    return shared_data / "aux" / "nw"


@pytest.fixture(scope="session")
def nw_cases(nw_dir):
    """[(pair name, codes A, codes B, expected score, parasail CIGAR path or None)]."""
    mat = blosum62()
    out = []
    for entry in json.loads((nw_dir / "expected_scores.json").read_text()):
        name = entry["pair"]
        a = encode(read_fasta(str(nw_dir / ("%s_A.fa" % name)))[0], mat)
        b = encode(read_fasta(str(nw_dir / ("%s_B.fa" % name)))[0], mat)
        assert (len(a), len(b)) == (entry["lenA"], entry["lenB"])
        cig = nw_dir / ("%s.parasail_nw_trace_scan_32.cigar" % name)
        out.append((name, a, b, entry["parasail_nw_scan_32"], cig if cig.exists() else None))
    assert len(out) == 5
    return out
