"""A GPU rank's chains in n groups (1 or 2: a device block holds two) instead of the core's two
(mpi_scaling.py --groups): one group puts all of a rank's chains in one flush a generation (half the
launches and copies, no host work beside the device's); each chain's draws are its own, so the files are
the same (checked on the host-driver stand-in: primates, 3 chains, 240 generations, files and screen)."""
from __future__ import annotations


def install(n: int) -> None:
    """Every CoreStepper made after this call steps its chains in n groups where it would use two."""
    from mbgpu.core.stepper import CoreStepper

    inner = CoreStepper.__init__

    def init(self, *args, **kwargs):
        inner(self, *args, **kwargs)
        if self.groups > 1:
            self.groups = n

    CoreStepper.__init__ = init
