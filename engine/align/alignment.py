"""An alignment result: ops <-> CIGAR, re-scoring, identity, and the 60-column text rendering."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .reference import OP_DEL, OP_INS, OP_MATCH

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Alignment:
    """One global alignment of record `name_a` (query, rows) against `name_b` (columns).

    `ops` is None for score-only results. CIGAR letters: `=` match, `X` mismatch, `I` a residue of A
    against a gap, `D` a residue of B against a gap (the SAM convention with A as the query).
    """

    name_a: str
    name_b: str
    score: int
    len_a: int
    len_b: int
    ops: np.ndarray | None = None


def expand_ops(ops: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-column letters `=`, `X`, `I`, `D` as a uint8 array (ASCII)."""
    ops = np.asarray(ops, dtype=np.uint8)
    if int(np.count_nonzero(ops != OP_DEL)) != len(a) or int(np.count_nonzero(ops != OP_INS)) != len(b):
        raise ValueError("ops do not consume both sequences exactly")
    out = np.empty(len(ops), dtype=np.uint8)
    diag = ops == OP_MATCH
    ia = np.cumsum(ops != OP_DEL) - 1
    ib = np.cumsum(ops != OP_INS) - 1
    same = a[ia[diag]] == b[ib[diag]]
    out[diag] = np.where(same, ord("="), ord("X"))
    out[ops == OP_INS] = ord("I")
    out[ops == OP_DEL] = ord("D")
    return out


def cigar(ops: np.ndarray, a: np.ndarray, b: np.ndarray) -> str:
    """Run-length CIGAR (`=`/`X`/`I`/`D`) of `ops`."""
    cols = expand_ops(ops, a, b)
    if len(cols) == 0:
        return ""
    starts = np.flatnonzero(np.concatenate(([True], cols[1:] != cols[:-1])))
    lengths = np.diff(np.concatenate((starts, [len(cols)])))
    return "".join("%d%s" % (n, chr(cols[s])) for s, n in zip(starts.tolist(), lengths.tolist()))


def parse_cigar(text: str) -> np.ndarray:
    """Ops of a CIGAR with `=`, `X`, `M`, `I`, `D` (inverse of `cigar` up to =/X vs M)."""
    ops, num = [], ""
    code = {"=": OP_MATCH, "X": OP_MATCH, "M": OP_MATCH, "I": OP_INS, "D": OP_DEL}
    for ch in text.strip():
        if ch.isdigit():
            num += ch
        else:
            ops.append(np.full(int(num or 1), code[ch], dtype=np.uint8))
            num = ""
    return np.concatenate(ops) if ops else np.zeros(0, dtype=np.uint8)


def rescore(ops: np.ndarray, a: np.ndarray, b: np.ndarray, scores: np.ndarray, gap: int) -> int:
    """The score of the alignment `ops` (used to check that a traceback is optimal)."""
    ops = np.asarray(ops, dtype=np.uint8)
    cols = expand_ops(ops, a, b)  # also checks that ops consume a and b exactly
    diag = ops == OP_MATCH
    ia = (np.cumsum(ops != OP_DEL) - 1)[diag]
    ib = (np.cumsum(ops != OP_INS) - 1)[diag]
    n_gaps = int(np.count_nonzero(cols == ord("I")) + np.count_nonzero(cols == ord("D")))
    return int(scores[a[ia], b[ib]].astype(np.int64).sum()) - gap * n_gaps


def identity(ops: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """(identical columns, alignment length)."""
    cols = expand_ops(ops, a, b)
    return int(np.count_nonzero(cols == ord("="))), len(cols)


def check_int32(len_a: int, len_b: int, scores: np.ndarray, gap: int) -> int:
    """Largest |H| any cell can reach; raises OverflowError when it might not fit an int32."""
    step = max(int(np.abs(scores).max()), abs(int(gap)))
    bound = (len_a + len_b + 64) * step  # 64: margin for the GPU's padding cells
    if bound > INT32_MAX:
        raise OverflowError("lengths %d x %d with scores up to %d could reach %d, past the 32-bit limit %d"
                            % (len_a, len_b, step, bound, INT32_MAX))
    return bound


def render(aln: Alignment, a_text: str, b_text: str, width: int = 60) -> str:
    """Readable alignment in blocks of `width` columns: A line, a match line (| identical, . mismatch), B line."""
    ops = aln.ops
    cols = expand_ops(ops, *_codes_from_text(a_text, b_text))
    top, mid, bot = [], [], []
    ia = ib = 0
    for op, col in zip(ops.tolist(), cols.tolist()):
        ca = a_text[ia] if op != OP_DEL else "-"
        cb = b_text[ib] if op != OP_INS else "-"
        ia += op != OP_DEL
        ib += op != OP_INS
        top.append(ca)
        bot.append(cb)
        mid.append("|" if col == ord("=") else ("." if op == OP_MATCH else " "))
    return _blocks(aln, "".join(top), "".join(mid), "".join(bot), width)


def _codes_from_text(a_text: str, b_text: str):
    """Case-folded byte codes, enough for `expand_ops` to tell identical residues."""
    fa = np.frombuffer(a_text.upper().encode("latin-1"), dtype=np.uint8)
    fb = np.frombuffer(b_text.upper().encode("latin-1"), dtype=np.uint8)
    return fa, fb


def _blocks(aln: Alignment, top: str, mid: str, bot: str, width: int) -> str:
    """Lay out the three alignment lines in blocks with 1-based residue coordinates."""
    lines, pa, pb = [], 0, 0
    label = max(len(aln.name_a), len(aln.name_b), 1)
    for s in range(0, len(top), width):
        t, m, b = top[s:s + width], mid[s:s + width], bot[s:s + width]
        na, nb = len(t) - t.count("-"), len(b) - b.count("-")
        lines.append("%-*s %8d %s %d" % (label, aln.name_a, pa + (na > 0), t, pa + na))
        lines.append("%-*s %8s %s" % (label, "", "", m))
        lines.append("%-*s %8d %s %d" % (label, aln.name_b, pb + (nb > 0), b, pb + nb))
        lines.append("")
        pa, pb = pa + na, pb + nb
    return "\n".join(lines)
