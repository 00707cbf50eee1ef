"""Will a run's conditional likelihoods fit in this machine's memory? Asked before they are allocated.

A run on the CPU keeps, for every chain (a lane) and every pattern set, two partials per internal node,
two transition matrices per node and two scale rows per internal node plus the cumulative ones
(mbgpu.likelihood.batched.LaneLayout), all float64. The compiled core (mbgpu.core.division) then
allocates the same tables for a pattern set before the interpreted instance's are released, so the
peak is every set's tables plus the largest set's once more. Too large an analysis (nruns x nchains x
patterns x states x categories) used to end in numpy's allocation traceback; now it stops with one
line, before any output file is written.

>>> need = likelihood_bytes(12, 8, [Table(n_patterns=232, n_states=4, n_categories=4)])
>>> check_fits(need, available=64 * GIB)
>>> check_fits(need, available=1000)                   # doctest: +ELLIPSIS
Traceback (most recent call last):
mbgpu.memory_check.NotEnoughMemory: this analysis needs 12 MiB of memory ...; this machine has 1000 bytes ...
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from mbgpu.errors import MbgpuError

GIB = 1 << 30
FLOAT = 8   # bytes of a float64


class NotEnoughMemory(MbgpuError):
    """The likelihood tables of an analysis do not fit in the memory available to this process."""


@dataclass(frozen=True)
class Table:
    """The dimensions of one pattern set's likelihood tables (one per lane)."""

    n_patterns: int
    n_states: int
    n_categories: int


def set_bytes(n_tips: int, n_lanes: int, t: Table) -> int:
    """Bytes of one pattern set's partials, matrices, scale rows and per-lane scratch, for every lane."""
    n_nodes = 2 * n_tips - 1
    n_internal = n_nodes - n_tips
    partials = 2 * n_internal * t.n_categories * t.n_patterns * t.n_states
    matrices = 2 * n_nodes * t.n_categories * t.n_states * t.n_states
    scales = 2 * (n_internal + 1) * t.n_patterns
    scratch = (2 * t.n_states + 2) * t.n_patterns            # two (S, P) work blocks, site values, +I terms
    return n_lanes * (partials + matrices + scales + scratch) * FLOAT


def likelihood_bytes(n_tips: int, n_lanes: int, tables: Sequence[Table]) -> int:
    """Peak bytes of a run's likelihood tables on the CPU: every set once, the largest twice (the compiled
    core copies a set before the interpreted instance's copy is released)."""
    sizes = [set_bytes(n_tips, n_lanes, t) for t in tables]
    return sum(sizes) + max(sizes, default=0)


def available_bytes() -> int | None:
    """Memory this process can still take: /proc/meminfo's MemAvailable, else the free physical pages
    (os.sysconf); None where neither is known."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(need: int, available: int | None) -> None:
    """Raise NotEnoughMemory when `need` bytes exceed `available` (None: unknown, not checked)."""
    if available is None or need <= available:
        return
    raise NotEnoughMemory("this analysis needs %s of memory for its conditional likelihoods; this machine has "
                          "%s available (reduce nruns or nchains, or use fewer data)"
                          % (show_bytes(need), show_bytes(available)))


def show_bytes(n: int) -> str:
    """`108 GiB`, `11 MiB`, `1000 bytes`: rounded up, so a need is never understated."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return "%d %s" % (-(-n // size), unit)
    return "%d bytes" % n
