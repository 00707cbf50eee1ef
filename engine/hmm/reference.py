"""numpy reference of HMMER's SSV and MSV byte recurrences (the CPU oracle of the GPU kernel).

SSV (ssvfilter.c): along every diagonal `v = sat8(v - sb[k][x_i])` from -128, keep the maximum.
The striped SSE layout and its band sweeps compute exactly this plain DP; the value only matters
until it reaches the overflow threshold, which `finalize_ssv` tests (see docs/hmm.md).
MSV (msvfilter.c) is the full byte DP with the J state, used where SSV cannot decide.
"""
from __future__ import annotations

import numpy as np

from .alphabet import PAD
from .fasta import SequenceDB
from .profile import ByteProfile
from .scores import nats_from_xj


def ssv_raw_batch(sb: np.ndarray, seqs: np.ndarray) -> np.ndarray:
    """Max signed SSV cell of each row of `seqs` (uint8[n, Lmax], PAD-padded); int64[n]."""
    n, lmax = seqs.shape
    M = sb.shape[0]
    sbT = sb.T.astype(np.int16)  # [code, k]
    v = np.full((n, M + 1), -128, dtype=np.int16)
    best = np.full(n, -128, dtype=np.int16)
    for i in range(lmax):
        new = v[:, :-1] - sbT[seqs[:, i]]
        np.clip(new, -128, 127, out=new)
        v[:, 1:] = new
        np.maximum(best, new.max(axis=1), out=best)
    return best.astype(np.int64)


def ssv_raw(prof: ByteProfile, db: SequenceDB, batch_cells: int = 1 << 22) -> np.ndarray:
    """Max signed SSV cell per sequence of `db`, batching sequences of similar length."""
    order = np.argsort(db.lengths, kind="stable")
    out = np.full(len(db), -128, dtype=np.int64)
    pos = 0
    while pos < len(order):
        nb = max(1, batch_cells // (prof.M + 1))
        idx = order[pos:pos + nb]
        lmax = max(int(db.lengths[idx].max()), 1)
        block = np.full((len(idx), lmax), PAD, dtype=np.uint8)
        for r, s in enumerate(idx):
            seq = db.sequence(int(s))
            block[r, :len(seq)] = seq
        out[idx] = ssv_raw_batch(prof.sb, block)
        pos += len(idx)
    return out


def msv_score(prof: ByteProfile, seq: np.ndarray) -> np.float32:
    """HMMER's byte MSV filter score in nats for one sequence (inf on overflow)."""
    L = len(seq)
    tjb = int(prof.tjb(L))
    tjbm = (tjb + prof.tbm) & 0xFF
    bias, base = prof.bias, 190
    rbT = prof.rb.T
    dp = np.zeros(prof.M, dtype=np.int64)
    xJ = 0
    xB = max(base - tjbm, 0)
    for i in range(L):
        prev = np.concatenate(([0], dp[:-1]))
        sv = np.minimum(np.maximum(prev, xB) + bias, 255)
        sv = np.maximum(sv - rbT[seq[i]], 0)
        xE = int(sv.max())
        if xE + bias >= 255:
            return np.float32(np.inf)
        xJ = max(xJ, max(xE - prof.tec, 0))
        xB = max(max(base, xJ) - tjbm, 0)
        dp = sv
    return nats_from_xj(np.array([xJ]), np.array([tjb]))[0]
