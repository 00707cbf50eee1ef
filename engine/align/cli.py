"""`mbgpu align A.fa B.fa`: global alignment of record i of A with record i of B (one pair or a batch)."""
from __future__ import annotations

import argparse
import sys

from mbgpu.errors import DataError, InputFileError, Location

from .alignment import cigar, identity, render
from .api import BACKENDS, align_records
from .fasta import encode, read_fasta
from .matrices import load_matrix


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line with exit status 2."""

    def error(self, message):
        self.exit(2, "mbgpu align: error: %s\n" % message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mbgpu align", description="Global (Needleman-Wunsch) alignment with a linear gap "
                "penalty. Record i of A is aligned with record i of B.")
    p.add_argument("a", metavar="A.fa", help="FASTA file of query sequences (rows)")
    p.add_argument("b", metavar="B.fa", help="FASTA file of target sequences (columns)")
    p.add_argument("--matrix", default="blosum62",
                   help="blosum62 (default), dna, dna:MATCH:MISMATCH, or an NCBI matrix file")
    p.add_argument("--gap", type=int, default=11, help="linear gap penalty per gap position (default 11)")
    p.add_argument("--score-only", action="store_true", help="print scores only (no traceback)")
    p.add_argument("--out", metavar="FILE", help="write the result to FILE instead of standard output")
    p.add_argument("--device", choices=BACKENDS, default="auto",
                   help="gpu, cpu (exact numpy reference) or auto (gpu when usable; default)")
    p.add_argument("--width", type=int, default=60, help="columns per alignment block (default 60)")
    return p


def _pairs(path_a: str, path_b: str):
    recs_a, recs_b = read_fasta(path_a), read_fasta(path_b)
    if len(recs_a) != len(recs_b):
        raise DataError("%s has %d records but %s has %d; record i of A is aligned with record i of B, "
                        "so the counts must be equal" % (path_a, len(recs_a), path_b, len(recs_b)),
                        Location(path_b))
    return list(zip(recs_a, recs_b))


def format_scores(alns) -> str:
    """Tab-separated table: name_a name_b len_a len_b score."""
    rows = ["#name_a\tname_b\tlen_a\tlen_b\tscore"]
    rows += ["%s\t%s\t%d\t%d\t%d" % (x.name_a, x.name_b, x.len_a, x.len_b, x.score) for x in alns]
    return "\n".join(rows) + "\n"


def format_full(alns, pairs, matrix, gap: int, width: int) -> str:
    """Per pair: header, score, CIGAR, identity and the alignment in `width`-column blocks."""
    out = []
    for k, (aln, (ra, rb)) in enumerate(zip(alns, pairs), start=1):
        a, b = encode(ra, matrix), encode(rb, matrix)
        same, length = identity(aln.ops, a, b)
        out.append("# pair %d: %s (%d) vs %s (%d), matrix %s, linear gap %d"
                   % (k, aln.name_a, aln.len_a, aln.name_b, aln.len_b, matrix.name, gap))
        out.append("score: %d" % aln.score)
        out.append("cigar: %s" % cigar(aln.ops, a, b))
        out.append("identity: %d/%d (%.2f%%)" % (same, length, 100.0 * same / max(length, 1)))
        out.append("")
        out.append(render(aln, ra.seq, rb.seq, width))
    return "\n".join(out)


def _write(text: str, path: str | None) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputFileError("cannot write the output (%s)" % exc.strerror, Location(path)) from None


def main(argv: list[str]) -> int:
    """Entry point of `mbgpu align`; user mistakes raise MbgpuError (printed by mbgpu.cli)."""
    args = build_parser().parse_args(argv)
    if args.width < 1:
        raise DataError("--width must be >= 1")
    matrix = load_matrix(args.matrix)
    pairs = _pairs(args.a, args.b)
    alns = align_records(pairs, matrix=matrix, gap=args.gap, score_only=args.score_only,
                         backend=args.device)
    text = format_scores(alns) if args.score_only else format_full(alns, pairs, matrix, args.gap, args.width)
    _write(text, args.out)
    return 0
