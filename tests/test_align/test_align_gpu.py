"""CUDA kernels (mbgpu.cuda.nw) against the numpy reference and the shared parasail/Biopython oracle."""
import numpy as np
import pytest

from mbgpu.align import reference
from mbgpu.align.alignment import rescore
from mbgpu.align.matrices import blosum62, dna

pytestmark = pytest.mark.gpu
GAP = 11


@pytest.fixture(scope="module")
def dev():
    from mbgpu.cuda.context import open_device

    return open_device()


def _related(rng, m, n, alphabet=20):
    """A random pair where B shares a mutated prefix of A (so alignments have long diagonals and gaps)."""
    a = rng.integers(0, alphabet, m).astype(np.uint8)
    k = min(m, n) // 2
    b = np.concatenate([a[:k], rng.integers(0, alphabet, n - k)]).astype(np.uint8)
    flip = rng.random(n) < 0.1
    b[flip] = rng.integers(0, alphabet, int(flip.sum()))
    return a, b


def test_oracle_pairs_scores_and_tracebacks(dev, nw_cases):
    from mbgpu.cuda import nw

    mat = blosum62()
    for name, a, b, expected, _ in nw_cases:
        only = nw.align_pair(dev, a, b, mat.scores, GAP, traceback=False)
        assert only.score == expected, name
        for trace in ("dirs", "borders"):
            full = nw.align_pair(dev, a, b, mat.scores, GAP, traceback=True, trace=trace)
            assert full.score == expected, (name, trace)
            assert rescore(full.ops, a, b, mat.scores, GAP) == expected, (name, trace)


@pytest.mark.parametrize("tw", [256, 32, 64])
def test_random_pairs_vs_reference(dev, tw):
    """Edge shapes (1 x n, tile multiples, +-1 around tiles) and tile widths vs the numpy reference, with
    both tracebacks (kept directions, tile recomputation): optimal, and the same alignment."""
    from mbgpu.cuda import nw

    mat = blosum62()
    rng = np.random.default_rng(11 + tw)
    shapes = [(1, 1), (1, 300), (300, 1), (256, 256), (257, 255), (511, 513), (40, 1500), (1200, 90),
              (777, 640)]
    for m, n in shapes:
        a, b = _related(rng, m, n, 25)
        gap = int(rng.integers(0, 15))
        expected = reference.score(a, b, mat.scores, gap)
        ops = {}
        for trace in ("dirs", "borders"):
            res = nw.align_pair(dev, a, b, mat.scores, gap, traceback=True, tw=tw, trace=trace)
            assert res.score == expected, (m, n, gap, trace)
            assert rescore(res.ops, a, b, mat.scores, gap) == expected, (m, n, gap, trace)
            ops[trace] = res.ops
        assert np.array_equal(ops["dirs"], ops["borders"]), (m, n, gap)


@pytest.mark.parametrize("rows,tw", [(4, 64), (4, 128)])
def test_four_rows_per_lane(dev, rows, tw):
    """The 128-row tile variant: scores from the numpy reference, optimal and identical tracebacks."""
    from mbgpu.cuda import nw

    mat = blosum62()
    rng = np.random.default_rng(21 + tw)
    for m, n in [(1, 1), (1, 200), (129, 127), (128, 64), (700, 900), (2000, 1500)]:
        a, b = _related(rng, m, n, 25)
        gap = int(rng.integers(0, 15))
        expected = reference.score(a, b, mat.scores, gap)
        only = nw.align_pair(dev, a, b, mat.scores, gap, traceback=False, tw=tw, rows=rows)
        dirs = nw.align_pair(dev, a, b, mat.scores, gap, tw=tw, rows=rows, trace="dirs")
        borders = nw.align_pair(dev, a, b, mat.scores, gap, tw=tw, rows=rows, trace="borders")
        assert only.score == dirs.score == borders.score == expected, (m, n, gap)
        assert rescore(dirs.ops, a, b, mat.scores, gap) == expected, (m, n, gap)
        assert np.array_equal(dirs.ops, borders.ops), (m, n, gap)


def test_kept_directions_on_a_long_pair(dev):
    """Many tiles in both directions (12 x 40 at tw=64), score from the numpy reference, same ops."""
    from mbgpu.cuda import nw

    mat = blosum62()
    a, b = _related(np.random.default_rng(8), 3000, 2500, 20)
    expected = reference.score(a, b, mat.scores, GAP)
    dirs = nw.align_pair(dev, a, b, mat.scores, GAP, tw=64, trace="dirs")
    borders = nw.align_pair(dev, a, b, mat.scores, GAP, tw=64, trace="borders")
    assert dirs.score == borders.score == expected
    assert rescore(dirs.ops, a, b, mat.scores, GAP) == expected
    assert np.array_equal(dirs.ops, borders.ops)


def test_batch_vs_reference(dev):
    from mbgpu.cuda import nw

    mat = blosum62()
    rng = np.random.default_rng(5)
    pairs = [_related(rng, int(rng.integers(1, 700)), int(rng.integers(1, 700)), 25) for _ in range(150)]
    got = nw.batch_scores(dev, pairs, mat.scores, GAP)
    want = [reference.score(a, b, mat.scores, GAP) for a, b in pairs]
    assert got.tolist() == want


def test_batch_oracle_pairs(dev, nw_cases):
    from mbgpu.cuda import nw

    mat = blosum62()
    got = nw.batch_scores(dev, [(a, b) for _, a, b, _, _ in nw_cases], mat.scores, GAP)
    assert got.tolist() == [e for _, _, _, e, _ in nw_cases]


def test_dna_matrix_on_gpu(dev):
    from mbgpu.cuda import nw

    mat = dna(5, -4)
    rng = np.random.default_rng(3)
    a, b = _related(rng, 900, 1000, 4)
    expected = reference.score(a, b, mat.scores, 7)
    res = nw.align_pair(dev, a, b, mat.scores, 7)
    assert res.score == expected
    assert rescore(res.ops, a, b, mat.scores, 7) == expected


def test_cli_on_gpu(nw_dir, tmp_path, capsys):
    from mbgpu.cli import main

    out = tmp_path / "aln.txt"
    status = main(["align", str(nw_dir / "homolog_2k_A.fa"), str(nw_dir / "homolog_2k_B.fa"), "--device", "gpu",
                   "--out", str(out)])
    assert status == 0
    assert "score: 6597" in out.read_text()
