"""Stop-signal checks across MPI ranks: a non-blocking collective at agreed generations, paced.

A signal (SLURM's USR1 before the time limit, Ctrl-C) reaches one rank or some; every rank must stop at
the same generation. Each check starts a non-blocking allreduce (max) of the ranks' signal numbers and
finishes the one started at the check before, so every rank stops at the same generation, one check
after the signal, and a rank ahead of the others waits only when it is a whole check ahead (a blocking
check made the fastest rank wait for the slowest at every one: issue 23). Compiled blocks of generations
end at checks, so the checks are paced: the first ones STOP_EVERY generations apart, then as far apart as
the slowest rank's blocks (MC3.BLOCK_SECONDS of work, at most MC3.BLOCK_MAX generations), a distance
carried in the same allreduce, so every rank agrees on it.
"""
from __future__ import annotations

import numpy as np

from mbgpu.sampler.mc3 import MC3

STOP_EVERY = 10      # generations between the first checks, and between any two checks at least


class StopCheck:
    """The schedule of stop-signal checks and the check in flight (see the module docstring)."""

    paced = True     # False: every STOP_EVERY generations (benchmarks/mpi_scaling.py --checks fixed)

    def __init__(self, comm):
        self.comm, self.pending = comm, None
        self.next_at, self.every = None, STOP_EVERY

    def next_check(self, gen: int) -> int:
        """The generation of the next check, `gen` or later; the same on every rank (ranks run the same
        generations and checks)."""
        if self.next_at is None or self.next_at < gen:
            self.next_at = -(-gen // STOP_EVERY) * STOP_EVERY
        return self.next_at

    def due(self, gen: int) -> bool:
        return gen == self.next_check(gen)

    def check(self, gen: int, signum: int, pace: int) -> int:
        """The check at generation `gen`: start this one with `signum` (0: none here) and `pace` (this
        rank's generations per block); the signal of the check before (0: none, or no check before)."""
        from mpi4py import MPI

        got = self.finish()
        self.next_at = gen + self.every
        if not got:
            ask = max(STOP_EVERY, min(int(pace), MC3.BLOCK_MAX)) if self.paced else STOP_EVERY
            send, recv = np.array([signum, -ask], dtype=np.int64), np.zeros(2, dtype=np.int64)
            self.pending = (self.comm.Iallreduce(send, recv, op=MPI.MAX), send, recv)
        return got

    def finish(self) -> int:
        """The check in flight finished (every rank reaches it: the same checks in the same order): its
        signal (0: none); its distance (the least any rank asked) spaces the checks after the next."""
        if self.pending is None:
            return 0
        request, _send, recv = self.pending
        request.Wait()
        self.pending = None
        self.every = int(-recv[1])
        return int(recv[0])
