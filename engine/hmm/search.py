"""Score a database against models through SSV (CPU reference or GPU), MSV where SSV cannot
decide, and the F1 P-value; write the per-sequence table.

One writer owns the table: the header and each row come from the same column list.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fasta import SequenceDB
from .profile import ByteProfile
from .reference import msv_score, ssv_raw
from .scores import finalize_ssv, msv_bits_and_p

COLUMNS = ("model", "seq", "L", "ssv_nats", "msv_nats", "null_nats", "msv_bits", "P_msv", "pass_F1")


@dataclass
class Result:
    """Per-sequence filter results of one model against one database."""

    model: str
    ssv: np.ndarray
    msv: np.ndarray
    null: np.ndarray
    bits: np.ndarray
    P: np.ndarray
    passed: np.ndarray


def ssv_raw_backend(prof: ByteProfile, db: SequenceDB, backend: str) -> np.ndarray:
    """Max signed SSV cell per sequence from the chosen backend ('cpu' or 'gpu')."""
    if backend == "gpu":
        from mbgpu.cuda.ssv import ssv_raw_gpu

        return ssv_raw_gpu(prof, db)
    return ssv_raw(prof, db)


def score_database(prof: ByteProfile, db: SequenceDB, f1: float = 0.02, backend: str = "cpu") -> Result:
    """SSV for every sequence, MSV (CPU) only where SSV returns no result, then F1."""
    raw = ssv_raw_backend(prof, db, backend)
    ssv = finalize_ssv(prof, raw, db.lengths)
    msv = ssv.copy()
    for i in np.flatnonzero(np.isnan(ssv)):
        msv[i] = msv_score(prof, db.sequence(int(i)))
    null, bits, P, passed = msv_bits_and_p(prof, msv, db.lengths, f1)
    return Result(prof.name, ssv, msv, null, bits, P, passed)


def format_rows(res: Result, db: SequenceDB):
    """Table rows (strings without newline) in COLUMNS order, formatted like the oracle tables."""
    for i, name in enumerate(db.names):
        yield "\t".join((res.model, name, str(int(db.lengths[i])), "%.6f" % res.ssv[i],
                         "%.6f" % res.msv[i], "%.6f" % res.null[i], "%.4f" % res.bits[i],
                         "%.4g" % res.P[i], "1" if res.passed[i] else "0"))


def header() -> str:
    """The table's header line."""
    return "#" + "\t".join(COLUMNS)
