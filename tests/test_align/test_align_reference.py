"""The numpy reference against the shared oracle (parasail/Biopython scores), brute force and parasail."""
import numpy as np
import pytest

pytest.importorskip("hypothesis")  # absent on the GPU image; these are CPU tests
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mbgpu.align import reference  # noqa: E402
from mbgpu.align.alignment import cigar, parse_cigar, rescore  # noqa: E402
from mbgpu.align.matrices import blosum62, dna  # noqa: E402

GAP = 11


def brute_force(a, b, scores, gap):
    """Textbook O(mn) Python double loop (independent of the vectorised reference)."""
    m, n = len(a), len(b)
    h = [[0] * (n + 1) for _ in range(m + 1)]
    for j in range(n + 1):
        h[0][j] = -gap * j
    for i in range(1, m + 1):
        h[i][0] = -gap * i
        for j in range(1, n + 1):
            h[i][j] = max(h[i - 1][j - 1] + int(scores[a[i - 1], b[j - 1]]), h[i - 1][j] - gap, h[i][j - 1] - gap)
    return h[m][n]


def test_oracle_scores(nw_cases):
    mat = blosum62()
    for name, a, b, expected, _ in nw_cases:
        assert reference.score(a, b, mat.scores, GAP) == expected, name


def test_oracle_tracebacks_rescore_optimal(nw_cases):
    mat = blosum62()
    for name, a, b, expected, cig in nw_cases:
        if len(a) > 10000:
            continue
        ops = reference.traceback(a, b, mat.scores, GAP)
        assert rescore(ops, a, b, mat.scores, GAP) == expected, name
        assert rescore(parse_cigar(cig.read_text()), a, b, mat.scores, GAP) == expected, name


def test_small_random_cigar_equals_parasail(nw_cases):
    """Same tie-breaking as parasail on this pair: the CIGAR strings are identical."""
    name, a, b, _, cig = nw_cases[0]
    assert name == "small_random"
    mat = blosum62()
    assert cigar(reference.traceback(a, b, mat.scores, GAP), a, b) == cig.read_text().strip()


def test_hirschberg_split_path_is_optimal():
    """Sizes past the full-matrix base case exercise the divide-and-conquer split."""
    rng = np.random.default_rng(7)
    mat = blosum62()
    a = rng.integers(0, 20, 1600).astype(np.uint8)
    b = np.concatenate([a[:700], rng.integers(0, 20, 500), a[900:]]).astype(np.uint8)
    assert (len(a) + 1) * (len(b) + 1) > reference._BASE_CELLS
    ops = reference.traceback(a, b, mat.scores, GAP)
    assert rescore(ops, a, b, mat.scores, GAP) == reference.score(a, b, mat.scores, GAP)


seqs = st.lists(st.integers(0, 24), min_size=1, max_size=40).map(lambda x: np.array(x, dtype=np.uint8))


@settings(max_examples=40, deadline=None)
@given(a=seqs, b=seqs, gap=st.integers(0, 15))
def test_random_pairs_vs_brute_force(a, b, gap):
    mat = blosum62()
    expected = brute_force(a, b, mat.scores, gap)
    assert reference.score(a, b, mat.scores, gap) == expected
    assert reference.score(b, a, mat.scores.T, gap) == expected
    assert rescore(reference.traceback(a, b, mat.scores, gap), a, b, mat.scores, gap) == expected


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(1, 400), n=st.integers(1, 400), gap=st.integers(1, 14))
def test_random_pairs_vs_parasail(seed, m, n, gap):
    parasail = pytest.importorskip("parasail")
    mat = blosum62()
    rng = np.random.default_rng(seed)
    letters = "ARNDCQEGHILKMFPSTWYV"
    sa = "".join(rng.choice(list(letters), m))
    sb = "".join(rng.choice(list(letters), n))
    a, b = (mat.lookup[np.frombuffer(s.encode(), np.uint8)] for s in (sa, sb))
    expected = parasail.nw_scan_32(sa, sb, gap, gap, parasail.blosum62).score
    assert reference.score(a, b, mat.scores, gap) == expected
    assert rescore(reference.traceback(a, b, mat.scores, gap), a, b, mat.scores, gap) == expected


def test_dna_matrix_and_empty_side():
    mat = dna(5, -4)
    a = mat.lookup[np.frombuffer(b"ACGTACGT", np.uint8)]
    b = mat.lookup[np.frombuffer(b"ACGACGT", np.uint8)]
    assert reference.score(a, b, mat.scores, 6) == 7 * 5 - 6
    ops = reference.traceback(a, b, mat.scores, 6)
    assert cigar(ops, a, b) == "3=1I4="
