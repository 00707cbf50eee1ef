"""The compiled sampler core: every chain of a process as arrays, advanced by numba code.

`rng` (one small generator state per chain), `trees` (trees as node arrays), `tree_moves` /
`branch_moves` / `pars_spr` (MrBayes' tree proposals on those arrays); docs/architecture.md says how
the pieces meet.
"""
