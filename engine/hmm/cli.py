"""`mbgpu ssv MODEL.hmm DB.fa [--F1 0.02] [--out hits.tsv] [--backend auto|cpu|gpu]`.

Prints one row per (model, sequence): SSV and MSV scores in nats, the null score, the MSV bit
score, its P-value from `STATS LOCAL MSV`, and whether it passes the F1 filter.
"""
from __future__ import annotations

import argparse
import sys

from mbgpu.errors import CommandError, InputFileError, Location

from .fasta import read_fasta
from .hmmfile import read_hmms
from .profile import byte_profile
from .search import format_rows, header, score_database


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line with status 2."""

    def error(self, message):
        raise CommandError("ssv: %s" % message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mbgpu ssv", description="HMMER3 SSV filter (bit-exact with HMMER 3.4) of "
                "profile HMMs against a protein FASTA database.")
    p.add_argument("model", help="HMMER3 ASCII .hmm file (several models allowed, gzip ok)")
    p.add_argument("db", help="protein FASTA file (gzip ok)")
    p.add_argument("--F1", type=float, default=0.02, dest="f1", help="P-value threshold (0.02)")
    p.add_argument("--out", help="write the table here instead of stdout")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                   help="auto: the GPU when CUDA is available, else the numpy reference")
    return p


def _backend(choice: str) -> str:
    if choice != "auto":
        return choice
    try:
        from mbgpu.cuda.context import cuda_available
    except ImportError:
        return "cpu"
    return "gpu" if cuda_available() else "cpu"


def main(argv: list[str]) -> int:
    """Run the filter; returns the exit status (user errors raise MbgpuError)."""
    args = build_parser().parse_args(argv)
    if not 0.0 < args.f1 <= 1.0:
        raise CommandError("ssv: --F1 must be in (0, 1], got %g" % args.f1)
    models = read_hmms(args.model)
    for hmm in models:
        if hmm.msv_mu != hmm.msv_mu:
            raise InputFileError("model %s has no STATS LOCAL MSV line; calibrate it (hmmbuild) "
                                 "so the F1 P-value can be computed" % hmm.name, Location(args.model))
    db = read_fasta(args.db)
    backend = _backend(args.backend)
    try:
        out = open(args.out, "w") if args.out else sys.stdout
    except OSError as exc:
        raise InputFileError("cannot write: %s" % exc.strerror, Location(args.out)) from exc
    try:
        out.write(header() + "\n")
        for hmm in models:
            res = score_database(byte_profile(hmm), db, args.f1, backend)
            for row in format_rows(res, db):
                out.write(row + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0
