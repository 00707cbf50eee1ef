"""HMMER3's SSV/MSV filters, bit-exact with HMMER 3.4, for `mbgpu ssv` (CPU reference and GPU).

Modules: `alphabet` (Easel amino codes, background), `hmmfile` (.hmm reader), `fasta` (packed
databases), `profile` (byte-scaled scores), `reference` (numpy SSV/MSV), `scores` (nats, null
model, P-values), `search` (pipeline + table), `cli` (the command).
"""
