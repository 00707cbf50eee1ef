"""A rank's time in compiled device blocks and how much of it waited for its GPU, written after every block
to block_timing.rankR.txt in the rank's folder (a file, not the screen: a launcher may drop what a rank
prints as it exits): mpi_scaling.py installs it in every rank (a wrapper round
DeviceBlockRunner.generations; the waits are CoreFlushes.waited's). Much waiting: the rank is bound by its
device; little: by its host."""
from __future__ import annotations

import os
import time


def install() -> None:
    """Time every DeviceBlockRunner.generations call of this process; the report rewritten after each."""
    from mbgpu.core.device_block import DeviceBlockRunner

    seen = {"blocks": 0.0, "runners": []}
    inner = DeviceBlockRunner.generations

    def generations(self, job):
        t0 = time.perf_counter()
        try:
            inner(self, job)
        finally:
            seen["blocks"] += time.perf_counter() - t0
            if not any(r is self for r in seen["runners"]):
                seen["runners"].append(self)
            _report(seen)

    DeviceBlockRunner.generations = generations


def _report(seen: dict) -> None:
    rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK", "0")
    flushes = {id(d.flushes): d.flushes for r in seen["runners"] for d in r.core.divisions}
    waits = [f.waited() for f in flushes.values()]
    waited, n = sum(w for w, _ in waits), sum(k for _, k in waits)
    blocks = seen["blocks"]
    with open("block_timing.rank%s.txt" % rank, "w", encoding="ascii") as f:
        f.write("block timing: rank %s: %.3f s in blocks, %.3f s of it waiting for the GPU (%.0f%%), %d waits\n"
                % (rank, blocks, waited, 100.0 * waited / blocks if blocks else 0.0, n))
