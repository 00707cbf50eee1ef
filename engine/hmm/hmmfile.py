"""Reader for HMMER3 ASCII profile files (`HMMER3/a..f`), several models per file.

Only what the SSV/MSV filters need is kept: name, length, match emission probabilities (as
HMMER stores them: `expf(-x)` in single precision) and the `STATS LOCAL MSV` Gumbel parameters.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError, Location

from .alphabet import K


@dataclass(frozen=True)
class HMM:
    """One profile HMM: `mat[k-1, x]` is the match emission probability of node k (float32)."""

    name: str
    M: int
    mat: np.ndarray
    msv_mu: float
    msv_lambda: float


def _open_text(path: Path):
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
        if magic == b"\x1f\x8b":
            return gzip.open(path, "rt", encoding="ascii", errors="replace")
        return open(path, "rt", encoding="ascii", errors="replace")
    except OSError as exc:
        raise InputFileError("cannot read HMM file: %s" % exc.strerror, Location(str(path))) from exc


def _expf_neg(tokens: list[str], where: Location) -> np.ndarray:
    """HMMER's `(*tok == '*') ? 0.0 : expf(-1.0 * atof(tok))`, correctly rounded to float32."""
    try:
        vals = np.array([0.0 if t == "*" else float(t) for t in tokens], dtype=np.float64)
    except ValueError as exc:
        raise InputFileError("bad probability field: %s" % exc, where) from exc
    x = (-vals).astype(np.float32).astype(np.float64)
    out = np.exp(x).astype(np.float32)
    out[np.array([t == "*" for t in tokens])] = 0.0
    return out


class _Parser:
    """Line-oriented state for one file; `models()` yields each HMM in turn."""

    def __init__(self, path: Path):
        self.path = path
        self.lineno = 0
        self.fh = _open_text(path)

    def where(self) -> Location:
        return Location(str(self.path), self.lineno, 1)

    def next_line(self) -> str | None:
        line = self.fh.readline()
        if not line:
            return None
        self.lineno += 1
        return line

    def models(self):
        with self.fh:
            while True:
                line = self.next_line()
                if line is None:
                    return
                if not line.strip():
                    continue
                if not line.startswith("HMMER3/"):
                    raise InputFileError("expected a HMMER3 header line, got %r" % line.strip()[:40],
                                         self.where())
                yield self.one_model()

    def header(self) -> dict:
        """Header tags up to the `HMM` line."""
        tags: dict = {}
        while True:
            line = self.next_line()
            if line is None:
                raise InputFileError("file ends inside a model header", self.where())
            f = line.split()
            if not f:
                continue
            if f[0] == "HMM":
                return tags
            if f[0] == "STATS" and len(f) >= 5 and f[1] == "LOCAL" and f[2] == "MSV":
                tags["MSV"] = (np.float32(f[3]), np.float32(f[4]))
            elif len(f) >= 2:
                tags.setdefault(f[0], " ".join(f[1:]))

    def one_model(self) -> HMM:
        tags = self.header()
        start = self.lineno
        if tags.get("ALPH", "amino").lower() != "amino":
            raise InputFileError("only amino-acid models are supported (ALPH %s)" % tags["ALPH"],
                                 Location(str(self.path), start, 1))
        try:
            M = int(tags["LENG"])
        except (KeyError, ValueError) as exc:
            raise InputFileError("model has no valid LENG line", Location(str(self.path), start, 1)) from exc
        mat = self.body(M)
        mu, lam = tags.get("MSV", (np.nan, np.nan))  # uncalibrated: scores only, no P-values
        return HMM(tags.get("NAME", "model"), M, mat, float(mu), float(lam))

    def body(self, M: int) -> np.ndarray:
        """Node lines after `HMM`: transitions header, optional COMPO, then M nodes of 3 lines."""
        mat = np.zeros((M, K), dtype=np.float32)
        k = 0
        while True:
            line = self.next_line()
            if line is None:
                raise InputFileError("file ends before '//'", self.where())
            f = line.split()
            if not f or f[0] in ("m->m", "COMPO"):
                continue
            if f[0] == "//":
                break
            if f[0].isdigit():
                k = int(f[0])
                if not 1 <= k <= M or len(f) < K + 1:
                    raise InputFileError("bad match line for node %s" % f[0], self.where())
                mat[k - 1] = _expf_neg(f[1:K + 1], self.where())
        if k != M:
            raise InputFileError("model has %d nodes, LENG says %d" % (k, M), self.where())
        return mat


def read_hmms(path) -> list[HMM]:
    """Every model in a HMMER3 ASCII file (plain or gzip)."""
    models = list(_Parser(Path(path)).models())
    if not models:
        raise InputFileError("no HMMER3 model found", Location(str(path)))
    return models
