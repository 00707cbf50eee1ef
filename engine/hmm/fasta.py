"""FASTA protein databases (plain or gzip) read into one packed digital array.

Sequences are digitised with Easel's amino alphabet and packed back to back, each padded to a
whole number of 32-bit words with the PAD code, so a GPU thread reads four residues per load.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import InputFileError, Location

from .alphabet import PAD, input_map


@dataclass
class SequenceDB:
    """Packed database: `codes[offsets[i] : offsets[i] + lengths[i]]` is sequence i (int64 offsets)."""

    names: list[str]
    lengths: np.ndarray
    offsets: np.ndarray
    codes: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    def sequence(self, i: int) -> np.ndarray:
        """Digital codes of sequence i (a view)."""
        o = int(self.offsets[i])
        return self.codes[o:o + int(self.lengths[i])]

    @property
    def residues(self) -> int:
        return int(self.lengths.sum())

    def subset(self, n: int) -> "SequenceDB":
        """The first n sequences (shares memory)."""
        n = min(n, len(self))
        end = int(self.offsets[n]) if n < len(self) else len(self.codes)
        return SequenceDB(self.names[:n], self.lengths[:n], self.offsets[:n], self.codes[:end])


def pack(seqs: list[np.ndarray], names: list[str]) -> SequenceDB:
    """Pack digital sequences, each padded with PAD to a multiple of 4 residues."""
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    padded = (lengths + 3) // 4 * 4
    offsets = np.zeros(len(seqs), dtype=np.int64)
    if len(seqs):
        offsets[1:] = np.cumsum(padded)[:-1]
    codes = np.full(int(padded.sum()), PAD, dtype=np.uint8)
    for s, o in zip(seqs, offsets):
        codes[o:o + len(s)] = s
    return SequenceDB(list(names), lengths, offsets, codes)


def _open(path: Path):
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
        return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")
    except OSError as exc:
        raise InputFileError("cannot read FASTA file: %s" % exc.strerror, Location(str(path))) from exc


def _digitise(chunks: list[bytes], table: np.ndarray, path: Path, lineno: int) -> np.ndarray:
    raw = np.frombuffer(b"".join(chunks), dtype=np.uint8)
    raw = raw[(raw > 32)]  # drop spaces, tabs, CR
    codes = table[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        ch = chr(raw[bad[0]])
        raise InputFileError("invalid residue %r in the sequence starting at this line" % ch,
                             Location(str(path), lineno, 1))
    return codes


def read_fasta(path) -> SequenceDB:
    """All sequences of a protein FASTA file; a sequence's name is the first word of its '>' line."""
    path = Path(path)
    table = input_map()
    names, seqs, chunks, start = [], [], [], 0
    try:
        with _open(path) as fh:
            for lineno, line in enumerate(fh, 1):
                if line.startswith(b">"):
                    if names:
                        seqs.append(_digitise(chunks, table, path, start))
                    words = line[1:].split()
                    if not words:
                        raise InputFileError("sequence without a name", Location(str(path), lineno, 1))
                    names.append(words[0].decode("ascii", "replace"))
                    chunks, start = [], lineno
                elif line.strip():
                    if not names:
                        raise InputFileError("sequence data before the first '>' line",
                                             Location(str(path), lineno, 1))
                    chunks.append(line)
    except (OSError, EOFError) as exc:
        raise InputFileError("cannot read FASTA file: %s" % exc, Location(str(path))) from exc
    if names:
        seqs.append(_digitise(chunks, table, path, start))
    if not names:
        raise InputFileError("no sequence found", Location(str(path)))
    return pack(seqs, names)
