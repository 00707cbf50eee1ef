"""Distributed MC3: every rank steps only its chains; rank 0 writes every file.

Every rank keeps the whole `runs` table, with its own chains as real `Chain`s and the others as
`RemoteChain` stand-ins, and the whole heat table `ranks`. After a generation that swaps or prints,
one allgather brings every chain's lnL, lnPr and best lnL to every rank, so every rank draws the swap
pairs from the identically seeded `swapseed` stream and decides every swap the same way: heats move
without further messages, exactly as in the serial MC3. Before a sample or a diagnostic, the ranks that
hold cold chains send their tree, values (and moves) to rank 0 in one gather; the stop decision is
broadcast from rank 0. So the output is byte-identical to the serial run for any number of ranks.
"""
from __future__ import annotations

from mbgpu.sampler.mc3 import MC3
from mbgpu.sampler.batch_step import step_generation


class RemoteChain:
    """Stand-in for a chain held by another rank: the scalars every rank knows, and on rank 0 the
    cold-chain state its holder last sent (tree, values, moves)."""

    def __init__(self, run: int, index: int):
        self.run, self.index = run, index
        self.lnl = self.lnpr = self.best_lnl = float("nan")
        self.tree = self.values = self.moves = None


class DistributedMC3(MC3):
    """MC3 over MPI ranks (see the module docstring); `layout` is an mbgpu.mpi.layout.Layout."""

    def __init__(self, runs, opts, swap_rng, sink, console, comm, layout):
        super().__init__(runs, opts, swap_rng, sink, console)
        self.comm, self.layout = comm, layout
        self.rank = comm.Get_rank()
        self.local = layout.chains_of(self.rank)
        self.led = self.local if layout.leader(self.rank) else []

    # -- the loop's hooks -------------------------------------------------------------------------
    def run(self) -> int:
        self.sync_scalars()
        gen = super().run()
        self.sync_scalars()
        self.sync_cold(with_moves=True)
        return gen

    def step_all(self) -> None:
        """This rank's chains take one batched step (mbgpu.sampler.batch_step), then scalars if needed."""
        o = self.opts
        runs = sorted({r for r, _c in self.local})
        mine = [[c for r2, c in self.local if r2 == r] for r in runs]
        step_generation([[self.runs[r][c] for c in cs] for r, cs in zip(runs, mine)],
                        [[self.ranks[r][c] for c in cs] for r, cs in zip(runs, mine)], o)
        if (o.nchains > 1 and self.gen % o.swapfreq == 0) or self.gen % o.printfreq == 0:
            self.sync_scalars()

    # -- collectives ------------------------------------------------------------------------------
    def sync_scalars(self) -> None:
        """Every rank learns every chain's lnL, lnPr and best lnL (one allgather)."""
        mine = [(r, c, ch.lnl, ch.lnpr, ch.best_lnl) for r, c in self.led for ch in [self.runs[r][c]]]
        for rows in self.comm.allgather(mine):
            for r, c, lnl, lnpr, best in rows:
                ch = self.runs[r][c]
                if isinstance(ch, RemoteChain):
                    ch.lnl, ch.lnpr, ch.best_lnl = lnl, lnpr, best

    def sync_cold(self, with_moves: bool) -> None:
        """Rank 0 receives the current cold chains' tree and values (and moves) from their holders."""
        mine = []
        if self.rank != 0:
            for r in range(len(self.runs)):
                ch = self.cold(r)
                if not isinstance(ch, RemoteChain) and (r, ch.index) in self.led:
                    mine.append((r, ch.index, ch.tree, ch.values, ch.moves if with_moves else None))
        got = self.comm.gather(mine, root=0)
        if self.rank != 0:
            return
        for rows in got:
            for r, c, tree, values, moves in rows:
                stub = self.runs[r][c]
                stub.tree, stub.values = tree, values
                if moves is not None:
                    stub.moves = moves

    # -- checkpoints (rank 0 writes; every rank takes part in the gather) ----------------------------
    def attach_checkpoints(self, ckp, file_sink) -> None:
        """Rank 0: ckp.attach (restores a continuation); then every rank adopts rank 0's MC3 state."""
        self.ckp = ckp
        if self.rank == 0:
            ckp.attach(self, file_sink)
            ckp.gather = lambda mc3: mc3.gathered_states     # set by the collective gather just before a write
        state = (self.gen, self.ranks, [t.tried for t in self.swaps], [t.accepted for t in self.swaps],
                 self.swap_rng.bit_generator.state, getattr(self, "elapsed_total", 0.0))
        gen, ranks, tried, accepted, rng_state, elapsed = self.comm.bcast(state, root=0)
        self.gen, self.ranks, self.elapsed_total = gen, [list(r) for r in ranks], elapsed
        for table, t, a in zip(self.swaps, tried, accepted):
            table.tried, table.accepted = [list(x) for x in t], [list(x) for x in a]
        self.swap_rng.bit_generator.state = rng_state
        self.after_generation = self._after_generation

    def _after_generation(self, mc3, gen: int) -> bool:
        """Every rank, every generation: a stop signal on any rank or a due checkpoint makes every rank
        send its chain states to rank 0, which writes; True (stop) on every rank after a signal."""
        from mpi4py import MPI

        ckp = self.ckp
        stop = self.comm.allreduce(ckp.stop.signum or 0, op=MPI.MAX)
        if not stop and not (ckp.enabled and gen % ckp.freq == 0):
            return False
        self.gathered_states = self._gather_states()
        if stop and ckp.stop.signum is None:
            ckp.stop.signum = stop
        if self.rank == 0:
            return bool(ckp.after_generation(self, gen))
        return bool(stop)

    def finish_checkpoints(self) -> None:
        """The end-of-run checkpoint (rank 0 decides whether one is due; the gather is collective)."""
        ckp = self.ckp
        due = (ckp.enabled or ckp.stop.signum is not None) and ckp.last_written != self.gen
        if self.comm.bcast(due, root=0):
            self.gathered_states = self._gather_states()
        if self.rank == 0:
            ckp.finish(self)

    def _gather_states(self) -> dict | None:
        from mbgpu.checkpoint.chain_state import capture_chain

        return self.gather_chain_states(capture_chain)

    def gather_chain_states(self, capture) -> dict | None:
        """{(run, chain): capture(chain)} of every chain on rank 0 (None elsewhere), for a checkpoint."""
        mine = {(r, c): capture(self.runs[r][c]) for r, c in self.led}
        got = self.comm.gather(mine, root=0)
        if self.rank != 0:
            return None
        out = {}
        for part in got:
            out.update(part)
        return out


class MpiSink:
    """The sink every rank's MC3 talks to: collectives first, then the real FileSink on rank 0."""

    def __init__(self, inner, comm):
        self.inner, self.comm = inner, comm

    def sample(self, gen: int, mc3) -> None:
        mc3.sync_cold(with_moves=False)
        if self.inner is not None:
            self.inner.sample(gen, mc3)

    def diagnose(self, gen: int, mc3):
        mc3.sync_cold(with_moves=True)
        stat = self.inner.diagnose(gen, mc3) if self.inner is not None else None
        return self.comm.bcast(stat, root=0)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def __getattr__(self, name):
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)
