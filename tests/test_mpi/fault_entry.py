"""Test-only entry for the abort and signal tests: `python fault_entry.py RANK:GEN:KIND FILE.nex` runs
`python -m mbgpu.mpi FILE.nex` with a fault injected on rank RANK right after its step of generation GEN:
KIND is `raise` (an exception), `kill` (SIGKILL) or `usr1` (a SIGUSR1 that reaches that rank only).
The product has no fault hook; this wraps mbgpu.mpi.driver.DistributedMC3.step_all before the run starts
and turns compiled blocks off (they step several generations without step_all).
"""
from __future__ import annotations

import os
import signal
import sys

KINDS = ("raise", "kill", "usr1")


def parse_fault(text: str) -> tuple[int, int, str]:
    """`1:20:raise` -> (1, 20, 'raise'); ValueError for anything else."""
    rank, gen, kind = text.split(":")
    if kind not in KINDS:
        raise ValueError("the fault must end in raise, kill or usr1, not %r" % kind)
    return int(rank), int(gen), kind


def inject(rank: int, gen: int, kind: str) -> None:
    """Make DistributedMC3.step_all fail as `kind` on `rank` at generation `gen`."""
    from mbgpu.mpi import driver

    step_all = driver.DistributedMC3.step_all

    def faulty_step_all(self) -> None:
        step_all(self)
        if self.rank != rank or self.gen != gen:
            return
        if kind == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if kind == "usr1":
            os.kill(os.getpid(), signal.SIGUSR1)
            return
        raise RuntimeError("injected fault at generation %d" % self.gen)

    driver.DistributedMC3.step_all = faulty_step_all
    driver.DistributedMC3.compiled_blocks = False


def main(argv: list[str]) -> int:
    from mbgpu.mpi.__main__ import main as mbgpu_mpi_main

    inject(*parse_fault(argv[0]))
    return mbgpu_mpi_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
