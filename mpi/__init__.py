"""MPI side of mbgpu (installed as `mbgpu.mpi`): rank layout, chain placement, swaps by message.

Importing this package does not import mpi4py; the modules that need it import it when called.
Modules: comm (launch detection, world, abort), layout (rank -> chains), devices (rank -> GPU,
compile once per node), driver (distributed MC3), sitesplit (patterns over K ranks), run (the session
entry: rank 0 reads the commands, the others serve its `mcmc`). Users' guide: docs/hpc.md.
"""
