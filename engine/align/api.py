"""Python API of `mbgpu align`: global alignment of one pair or of many pairs, on the GPU or the CPU.

`backend="auto"` uses the CUDA kernels when pycuda and a device are present, else the numpy reference;
both give the same (optimal) scores, and every traceback re-scores to that score.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from mbgpu.errors import DataError

from . import reference
from .alignment import Alignment, check_int32
from .fasta import Record, encode
from .matrices import ScoringMatrix, load_matrix

BACKENDS = ("auto", "cpu", "gpu")


def _matrix(matrix) -> ScoringMatrix:
    return matrix if isinstance(matrix, ScoringMatrix) else load_matrix(str(matrix))


def _pick_backend(backend: str) -> str:
    """Resolve `auto` to `gpu` when a CUDA device is usable, else `cpu`."""
    if backend not in BACKENDS:
        raise DataError("backend must be one of %s, not %r" % (", ".join(BACKENDS), backend))
    if backend != "auto":
        return backend
    from mbgpu.cuda.context import cuda_available

    return "gpu" if cuda_available() else "cpu"


def check_inputs(a: np.ndarray, b: np.ndarray, names: tuple[str, str], matrix: ScoringMatrix, gap: int,
                 backend: str) -> None:
    """Refuse a negative gap and, for the 32-bit GPU kernels, lengths whose scores might overflow."""
    if gap < 0:
        raise DataError("the gap penalty must be >= 0 (it is subtracted per gap position), not %d" % gap)
    if backend == "cpu":
        return
    try:
        check_int32(len(a), len(b), matrix.scores, gap)
    except OverflowError as exc:
        raise DataError("%s vs %s: possible int32 overflow in the GPU kernels: %s; the CPU backend "
                        "(--device cpu) uses 64-bit scores" % (names[0], names[1], exc)) from None


def align_records(pairs: Sequence[tuple[Record, Record]], *, matrix="blosum62", gap: int = 11,
                  score_only: bool = False, backend: str = "auto", device=None) -> list[Alignment]:
    """Align record A_i with record B_i for every pair; returns one `Alignment` per pair.

    Raises DataError for empty sequences, letters outside the matrix alphabet, a negative gap or a
    possible int32 overflow (GPU); DeviceError when `backend="gpu"` and no GPU is usable.
    """
    mat = _matrix(matrix)
    be = _pick_backend(backend)
    coded = [(encode(ra, mat), encode(rb, mat)) for ra, rb in pairs]
    for (a, b), (ra, rb) in zip(coded, pairs):
        check_inputs(a, b, (ra.name, rb.name), mat, gap, be)
    if be == "gpu":
        results = _gpu(coded, mat, gap, score_only, device)
    else:
        results = [_cpu(a, b, mat, gap, score_only) for a, b in coded]
    return [Alignment(ra.name, rb.name, s, len(ra.seq), len(rb.seq), ops)
            for (ra, rb), (s, ops) in zip(pairs, results)]


def _cpu(a, b, mat: ScoringMatrix, gap: int, score_only: bool):
    """(score, ops or None) from the numpy reference."""
    if score_only:
        return reference.score(a, b, mat.scores, gap), None
    ops = reference.traceback(a, b, mat.scores, gap)
    from .alignment import rescore

    return rescore(ops, a, b, mat.scores, gap), ops


def _gpu(coded, mat: ScoringMatrix, gap: int, score_only: bool, device):
    """(score, ops or None) per pair from the CUDA kernels (batch kernel for several score-only pairs)."""
    from mbgpu.cuda import nw
    from mbgpu.cuda.context import open_device

    dev = device if device is not None else open_device()
    if score_only and len(coded) > 1:
        scores = nw.batch_scores(dev, coded, mat.scores, gap)
        return [(int(s), None) for s in scores]
    out = []
    for a, b in coded:
        res = nw.align_pair(dev, a, b, mat.scores, gap, traceback=not score_only)
        out.append((res.score, res.ops))
    return out


def align(a: str, b: str, *, matrix="blosum62", gap: int = 11, score_only: bool = False,
          backend: str = "auto") -> Alignment:
    """Globally align two sequences given as strings.

    >>> align("HEAGAWGHEE", "PAWHEAE", gap=8, backend="cpu").score
    -8
    """
    return align_records([(Record("A", a), Record("B", b))], matrix=matrix, gap=gap,
                         score_only=score_only, backend=backend)[0]


