"""FASTA reading and encoding of sequences into matrix codes, with errors that name record and position."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mbgpu.errors import DataError, InputFileError, Location

from .matrices import ScoringMatrix


@dataclass(frozen=True)
class Record:
    """One FASTA record: its name (first word of the header), residues, file and header line."""

    name: str
    seq: str
    file: str = "<input>"
    line: int = 0


def parse_fasta(text: str, file: str = "<input>") -> list[Record]:
    """Records of a FASTA text; whitespace inside sequences is ignored, `;` lines are comments."""
    records: list[Record] = []
    name, start, chunks = None, 0, []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            if name is not None:
                records.append(Record(name, "".join(chunks), file, start))
            name = line[1:].split()[0] if line[1:].split() else "record%d" % (len(records) + 1)
            start, chunks = lineno, []
        elif name is None:
            raise InputFileError("sequence data before the first '>' header", Location(file, lineno, 1))
        else:
            chunks.append("".join(line.split()))
    if name is not None:
        records.append(Record(name, "".join(chunks), file, start))
    if not records:
        raise InputFileError("no FASTA records (expected lines starting with '>')", Location(file))
    return records


def read_fasta(path: str) -> list[Record]:
    """Records of the FASTA file at `path`."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise InputFileError("no such file", Location(str(path))) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError("cannot read the file (%s)" % exc, Location(str(path))) from None
    return parse_fasta(text, str(path))


def encode(record: Record, matrix: ScoringMatrix) -> np.ndarray:
    """uint8 codes of `record.seq` under `matrix`; an empty sequence or a foreign letter is a DataError."""
    where = Location(record.file, record.line, 1)
    if not record.seq:
        raise DataError("record %r has an empty sequence" % record.name, where)
    raw = np.frombuffer(record.seq.encode("latin-1", "replace"), dtype=np.uint8)
    codes = matrix.lookup[raw]
    bad = np.flatnonzero(codes == 255)
    if bad.size:
        pos = int(bad[0])
        raise DataError("record %r: letter %r at position %d is not in the %s alphabet (%s)"
                        % (record.name, record.seq[pos], pos + 1, matrix.name, matrix.letters), where)
    return codes


def encode_text(seq: str, matrix: ScoringMatrix, name: str = "sequence") -> np.ndarray:
    """Codes of a plain string (the Python API's entry point), with the same checks as `encode`."""
    return encode(Record(name, seq), matrix)
