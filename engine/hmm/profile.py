"""HMMER's byte-scaled MSV/SSV profile, reproduced bit for bit (p7_ProfileConfig + mf_conversion).

Match scores are `log(mat/bg)` (double log, stored as float), degenerate residues get Easel's
background-weighted mean, and `biased_byteify` turns them into costs in third-bits
(scale 3/ln2, base 190, bias = the largest score). The SSV filter uses `sb = rb - bias`
(signed, capped at 127) as in `sf_conversion`. Length-dependent terms (`tjb`) are set per target.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .alphabet import BACKGROUND, K, KP, NCODES, degeneracy_mask
from .hmmfile import HMM

F32 = np.float32
SCALE_B = F32(3.0 / math.log(2.0))
BASE_B = 190


def logf(x) -> np.ndarray:
    """C `logf` on float32 input (correctly rounded via double)."""
    return np.log(np.asarray(x, dtype=F32).astype(np.float64)).astype(F32)


def roundf(x) -> np.ndarray:
    """C `roundf`: halves away from zero (numpy's round is half-to-even)."""
    x64 = np.asarray(x, dtype=F32).astype(np.float64)
    return (np.sign(x64) * np.floor(np.abs(x64) + 0.5)).astype(F32)


def unbiased_byteify(sc) -> np.ndarray:
    """Transition score -> uchar cost, saturating at 255 (p7_oprofile.c)."""
    cost = F32(-1.0) * roundf(SCALE_B * np.asarray(sc, dtype=F32))
    return np.where(cost > 255, 255, np.nan_to_num(cost, posinf=255)).astype(np.int64)


def biased_byteify(sc, bias: int) -> np.ndarray:
    """Match score -> biased uchar cost `bias - round(scale*sc)`, 255 for very bad or -inf scores."""
    with np.errstate(invalid="ignore"):
        cost = F32(-1.0) * roundf(SCALE_B * np.asarray(sc, dtype=F32))
    big = ~(cost <= 255 - bias)  # also catches +inf (from -inf scores)
    val = np.where(big, 0, cost).astype(np.int64) + bias
    return np.where(big, 255, val & 0xFF).astype(np.int64)


def match_scores(hmm: HMM) -> np.ndarray:
    """float32[M, KP] match emission scores p7P_MSC (gap, '*', '~' are -inf)."""
    f = BACKGROUND
    with np.errstate(divide="ignore"):
        canon = np.log(hmm.mat.astype(np.float64) / f.astype(np.float64)).astype(F32)
    sc = np.full((hmm.M, KP), -np.inf, dtype=F32)
    sc[:, :K] = canon
    mask = degeneracy_mask()
    for code in range(K + 1, KP - 2):  # esl_abc_FExpectScVec over B J Z O U X
        result = np.zeros(hmm.M, dtype=F32)
        denom = F32(0.0)
        for i in np.flatnonzero(mask[code]):
            with np.errstate(invalid="ignore"):
                result = result + canon[:, i] * f[i]
            denom = F32(denom + f[i])
        sc[:, code] = result / denom
    return sc


@dataclass(frozen=True)
class ByteProfile:
    """What HMMER's SSV and MSV filters need from one model (the `om` byte fields)."""

    name: str
    M: int
    rb: np.ndarray        # int64[M, NCODES]: MSV costs rbv (PAD row = 255)
    sb: np.ndarray        # int64[M, NCODES]: SSV signed costs sbv = min(rb - bias, 127)
    bias: int
    tbm: int
    tec: int
    msv_mu: float
    msv_lambda: float

    def tjb(self, L) -> np.ndarray:
        """Per-target N/J->B cost: unbiased_byteify(logf(3/(L+3))) (ReconfigMSVLength)."""
        L = np.asarray(L, dtype=np.int64)
        return unbiased_byteify(logf(F32(3.0) / (L + 3).astype(F32)))


def byte_profile(hmm: HMM) -> ByteProfile:
    """Configure `hmm` like p7_ProfileConfig (local multihit) + p7_oprofile_Convert, byte part."""
    sc = match_scores(hmm)
    top = max(F32(0.0), sc[:, :K].max()) if hmm.M > 1 else sc[:, :K].max()
    bias = int(unbiased_byteify(-F32(top)))
    rb = np.full((hmm.M, NCODES), 255, dtype=np.int64)
    rb[:, :KP] = biased_byteify(sc, bias)
    sx = np.clip(127 + bias - rb, 0, 255)          # _mm_subs_epu8(bias+127, rbv)
    sb = (sx ^ 127).astype(np.uint8).view(np.int8).astype(np.int64)  # ^127, read as signed
    tbm = int(unbiased_byteify(logf(F32(2.0) / (F32(hmm.M) * F32(hmm.M + 1)))))
    tec = int(unbiased_byteify(logf(F32(0.5))))
    return ByteProfile(hmm.name, hmm.M, rb, sb, bias, tbm, tec, hmm.msv_mu, hmm.msv_lambda)
