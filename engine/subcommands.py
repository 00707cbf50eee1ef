"""Tools reached as `mbgpu NAME ...` beside the MrBayes-style `mbgpu FILE.nex`.

Each entry names a module with `main(argv: list[str]) -> int`; user mistakes there raise
`mbgpu.errors.MbgpuError`, which the CLI prints as one line with exit status 2.
"""

SUBCOMMANDS = {
    "align": ("mbgpu.align.cli", "global (Needleman-Wunsch) alignment of protein/DNA pairs"),
    "ssv": ("mbgpu.hmm.cli", "HMMER3 SSV filter of a profile HMM against a sequence database"),
    "potential": ("mbgpu.grid.cli", "AutoGrid-compatible Coulomb potential grid of a receptor"),
}
