"""Where the `nruns x nchains` chains live: rank -> (run, chain), and rank groups for site decomposition.

Chains are numbered run-major (run 0 chain 0, run 0 chain 1, ...) and cut into contiguous blocks, one per
chain group; when the count does not divide, the first groups hold one chain more. With site
decomposition (`sitesplit=K`) a group is K consecutive ranks that hold the same chains and split the
site patterns among them; rank `g*K` (the group leader) speaks for the group. The placement never
changes results: every chain has its own random stream and the swap schedule is drawn on every rank.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import CommandError


@dataclass(frozen=True)
class Layout:
    """Placement of `nruns * nchains` chains on `size` ranks in groups of `sitesplit` ranks.

    >>> Layout(2, 3, 4).chains_of(0)
    [(0, 0), (0, 1)]
    >>> Layout(2, 3, 4).owner(1, 2)
    3
    """

    nruns: int
    nchains: int
    size: int
    sitesplit: int = 1

    def __post_init__(self):
        total = self.nruns * self.nchains
        k = self.sitesplit
        if k < 1 or self.size % k:
            raise CommandError("%d MPI processes cannot be cut into site-split groups of %d: start a multiple of "
                               "%d processes (mpirun -np %d) or change set sitesplit=" % (self.size, k, k, k))
        if self.groups > total:
            raise CommandError("%d MPI processes%s but only %d chains (nruns=%d x nchains=%d): start at most %d "
                               "processes (mpirun -np %d) or raise nruns/nchains" % (
                                   self.size, " in %d site-split groups" % self.groups if k > 1 else "", total,
                                   self.nruns, self.nchains, total * k, total * k))

    @property
    def groups(self) -> int:
        return self.size // self.sitesplit

    def group_of(self, rank: int) -> int:
        return rank // self.sitesplit

    def leader(self, rank: int) -> bool:
        """True for the rank that speaks for its group (sends samples, takes part in swaps)."""
        return rank % self.sitesplit == 0

    def _block(self, group: int) -> tuple[int, int]:
        total = self.nruns * self.nchains
        base, extra = divmod(total, self.groups)
        start = group * base + min(group, extra)
        return start, start + base + (group < extra)

    def chains_of(self, rank: int) -> list[tuple[int, int]]:
        """The (run, chain) pairs that `rank` steps, in run-major order."""
        start, stop = self._block(self.group_of(rank))
        return [divmod(k, self.nchains) for k in range(start, stop)]

    def owner(self, run: int, chain: int) -> int:
        """The leader rank of the group holding chain (run, chain)."""
        k = run * self.nchains + chain
        for g in range(self.groups):
            start, stop = self._block(g)
            if start <= k < stop:
                return g * self.sitesplit
        raise AssertionError("chain (%d, %d) outside the layout" % (run, chain))

    def table(self, devices: list[str]) -> list[str]:
        """The start-up table: one line per rank, its chains (1-based, like the screen) and its device."""
        lines = ["   MPI layout: %d processes, %d runs x %d chains%s" % (
            self.size, self.nruns, self.nchains, ", site patterns split over %d ranks per group" % self.sitesplit
            if self.sitesplit > 1 else ""),
                 "      rank -- (run, chain) -- device"]
        for rank in range(self.size):
            chains = " ".join("(%d,%d)" % (r + 1, c + 1) for r, c in self.chains_of(rank))
            part = " [sites %d/%d]" % (rank % self.sitesplit + 1, self.sitesplit) if self.sitesplit > 1 else ""
            lines.append("      %4d -- %s%s -- %s" % (rank, chains, part, devices[rank]))
        return lines
