"""From byte DP results to HMMER's numbers: SSV/MSV nats, null1 score, bits and the F1 P-value.

Every step keeps HMMER's single-precision arithmetic so the scores print identically.
"""
from __future__ import annotations

import numpy as np

from .profile import BASE_B, SCALE_B, ByteProfile

F32 = np.float32
LOG2 = 0.69314718055994529  # eslCONST_LOG2
SMALLX1 = 5e-9              # eslSMALLX1 in esl_gumbel_surv


def nats_from_xj(xj: np.ndarray, tjb: np.ndarray) -> np.ndarray:
    """`((float)(xJ - tjb) - (float)base) / scale_b - 3.0` in float32."""
    sc = (np.asarray(xj) - np.asarray(tjb)).astype(F32) - F32(BASE_B)
    return (sc / SCALE_B - F32(3.0)).astype(F32)


def finalize_ssv(prof: ByteProfile, raw: np.ndarray, L: np.ndarray) -> np.ndarray:
    """p7_SSVFilter's ending: float32 nats, +inf on overflow, nan where SSV cannot decide.

    `raw` is the maximum signed cell value (v; unsigned xE = 256 + v while no overflow).
    """
    raw = np.asarray(raw, dtype=np.int64)
    tjb = prof.tjb(L)
    bias, tbm, tec = prof.bias, prof.tbm, prof.tec
    out = np.full(raw.shape, np.nan, dtype=F32)
    unsure = tjb + tbm + tec + bias >= 127
    over = raw >= -1 - bias
    begin = BASE_B - tjb - tbm
    out[over & (begin >= 128)] = np.inf
    xe = 256 + np.maximum(raw, -128) + begin - 128
    over2 = ~over & (xe >= 255 - bias)
    out[over2] = np.inf
    xj = xe - tec
    ok = ~over & ~over2 & (xj <= BASE_B)
    out[ok] = nats_from_xj(xj[ok], tjb[ok])
    out[unsure] = np.nan
    return out


def null_one(L: np.ndarray) -> np.ndarray:
    """p7_bg_NullOne after p7_bg_SetLength(L): `(float)L*log(p1) + log(1-p1)`, p1 = L/(L+1)."""
    Lf = np.asarray(L, dtype=np.int64).astype(F32)
    p1 = (Lf / (Lf + F32(1.0))).astype(F32).astype(np.float64)
    with np.errstate(divide="ignore"):
        return (Lf.astype(np.float64) * np.log(p1) + np.log(1.0 - p1)).astype(F32)


def gumbel_surv(x: np.ndarray, mu: float, lam: float) -> np.ndarray:
    """esl_gumbel_surv(x, mu, lambda) in double precision."""
    y = float(lam) * (np.asarray(x, dtype=np.float64) - float(mu))
    with np.errstate(over="ignore"):
        ey = -np.exp(-y)
    small = np.abs(ey) < SMALLX1
    return np.where(small, -ey, 1.0 - np.exp(ey))


def msv_bits_and_p(prof: ByteProfile, msv: np.ndarray, L: np.ndarray, f1: float = 0.02):
    """(null nats, bits, P, pass) of the F1 filter from the MSV score, as p7_Pipeline does."""
    null = null_one(L)
    with np.errstate(invalid="ignore"):
        bits = ((np.asarray(msv, dtype=F32) - null).astype(F32).astype(np.float64) / LOG2).astype(F32)
    P = gumbel_surv(bits, prof.msv_mu, prof.msv_lambda)
    passed = ~(P > f1)
    return null, bits, P, passed

