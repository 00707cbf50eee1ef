"""MPI side of mbgpu (installed as `engine.mpi`): rank layout, chain placement, swaps by message.

Importing this package does not import mpi4py; the modules that need it import it when called.
"""
