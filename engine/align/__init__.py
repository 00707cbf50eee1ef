"""Global (Needleman-Wunsch) alignment with a linear gap penalty: `mbgpu align` and its Python API.

`align(a, b)` and `align_records(pairs)` run on the GPU (mbgpu.cuda.nw) when one is usable, else on
the exact numpy reference (mbgpu.align.reference); results are `Alignment` records.
"""
from .alignment import Alignment, cigar, identity, rescore
from .api import align, align_records
from .fasta import Record, read_fasta
from .matrices import ScoringMatrix, blosum62, dna, load_matrix

__all__ = ["Alignment", "Record", "ScoringMatrix", "align", "align_records", "blosum62", "cigar", "dna",
           "identity", "load_matrix", "read_fasta", "rescore"]
