"""Distributed MC3 and the MPI placement of the run driver: every rank steps only its chains; rank 0
writes every file.

Every rank keeps the whole `runs` table, with its own chains as real `Chain`s and the others as
`RemoteChain` stand-ins, and the whole heat table `ranks`. After a generation that swaps or prints,
one allgather brings every chain's lnL, lnPr and best lnL to every rank, so every rank draws the swap
pairs from the identically seeded `swapseed` stream and decides every swap the same way: heats move
without further messages, exactly as in the serial MC3. When every run lives on one rank group
(`runs_local`: e.g. 4 runs on 4 ranks), a rank decides only its own runs' swaps (every rank still draws
every swap's uniforms, so the stream stays shared) and needs no message per generation: the runs' heats
and swap counts reach every rank (`sync_heats`) only where rank 0 reads them (screen lines, samples,
diagnostics, checkpoints, the end). Before a sample or a diagnostic, the ranks that
hold cold chains send their tree, values (and moves) to rank 0 in one gather; the stop decision is
broadcast from rank 0. So the output is byte-identical to the serial run for any number of ranks.
`MpiPlacement` is what mbgpu.run_driver.drive asks of a rank: its chains, backend and collectives.
"""
from __future__ import annotations

import socket
from contextlib import contextmanager

from mbgpu.checkpoint.chain_state import capture_chain, restore_chain
from mbgpu.checkpoint.errors import CheckpointMismatch
from mbgpu.checkpoint.state import chain_state
from mbgpu.errors import MbgpuError
from mbgpu.likelihood import select
from mbgpu.mpi import devices
from mbgpu.mpi.comm import abort
from mbgpu.mpi.layout import Layout
from mbgpu.mpi.stop_check import StopCheck
from mbgpu.sampler.batch_step import step_generation
from mbgpu.sampler.mc3 import MC3, RunOptions
from mbgpu.sampler.setup import build_runs


class RemoteChain:
    """Stand-in for a chain held by another rank: the scalars every rank knows, and on rank 0 the
    cold-chain state its holder last sent (trees, values, moves)."""

    def __init__(self, run: int, index: int):
        self.run, self.index = run, index
        self.lnl = self.lnpr = self.best_lnl = float("nan")
        self.trees = self.values = self.moves = None

    @property
    def tree(self):
        """The cold chain's one tree (several trees are read through `trees`, as on a Chain)."""
        assert self.trees is not None and len(self.trees) == 1
        return self.trees[0]


def share_scalars(comm, runs, led) -> None:
    """Every rank learns the lnL, lnPr and best lnL of every chain (`led`: the (run, chain) pairs this rank
    speaks for) in its RemoteChain stand-ins; one allgather."""
    mine = [(r, c, ch.lnl, ch.lnpr, ch.best_lnl) for r, c in led for ch in [runs[r][c]]]
    for rows in comm.allgather(mine):
        for r, c, lnl, lnpr, best in rows:
            ch = runs[r][c]
            if isinstance(ch, RemoteChain):
                ch.lnl, ch.lnpr, ch.best_lnl = lnl, lnpr, best


class DistributedMC3(MC3):
    """MC3 over MPI ranks (see the module docstring); `layout` is an mbgpu.mpi.layout.Layout."""

    cpu_where = " on processor 0"

    def __init__(self, runs, opts, swap_rng, sink, console, comm, layout, stops=None):
        super().__init__(runs, opts, swap_rng, sink, console)
        self.comm, self.layout = comm, layout
        self.stops = stops if stops is not None else StopCheck(comm)
        self.rank = comm.Get_rank()
        self.local = layout.chains_of(self.rank)
        self.led = self.local if layout.leader(self.rank) else []
        self._grouped = None

    # -- the loop's hooks -------------------------------------------------------------------------
    def run(self) -> int:
        self.sync_scalars()
        gen = super().run()
        self.sync_scalars()
        self.sync_cold(with_moves=True)
        return gen

    @property
    def runs_local(self) -> bool:
        """Every run's chains are held by one rank group, and no ss or reweighting reads other runs' chains
        every generation: swaps need no messages."""
        return self.stepping is None and self.reweight is None and self._one_group_per_run

    @property
    def _one_group_per_run(self) -> bool:
        if self._grouped is None:
            self._grouped = all(len({self.layout.owner(r, c) for c in range(self.opts.nchains)}) == 1
                                for r in range(len(self.runs)))
        return self._grouped

    def held_runs(self) -> list[int] | None:
        """With runs_local, this rank's runs: their generations between two collectives (samples, screen
        lines, diagnostics, stop-signal checks, checkpoints: the ends of every block, on every rank) may go
        in compiled blocks, heat swaps inside; None otherwise (swaps need every generation's scalars)."""
        return sorted({r for r, _c in self.local}) if self.runs_local else None

    def _block_end(self, gen: int) -> int:
        """MC3._block_end, and no block past a stop-signal check (a collective every rank must reach)."""
        return min(super()._block_end(gen), self.stops.next_check(gen))

    def after_block(self, gen: int) -> None:
        """Before a screen line every rank takes every chain's scalars and every run's heats."""
        if gen % self.opts.printfreq == 0:
            self.sync_scalars()
            self.sync_heats()

    def step_all(self) -> None:
        """This rank's chains take one batched step (mbgpu.sampler.batch_step), then scalars if needed."""
        o = self.opts
        runs = sorted({r for r, _c in self.local})
        mine = [[c for r2, c in self.local if r2 == r] for r in runs]
        step_generation([[self.runs[r][c] for c in cs] for r, cs in zip(runs, mine)],
                        [[self.ranks[r][c] for c in cs] for r, cs in zip(runs, mine)], o)
        swaps = o.nchains > 1 and self.gen % o.swapfreq == 0
        if self.runs_local:
            if self.gen % o.printfreq == 0:                  # the screen line: every chain's lnL and heat
                self.sync_scalars()
                if not swaps:
                    self.sync_heats()
        elif swaps or self.gen % o.printfreq == 0 or \
                (self.stepping is not None and self.gen % o.samplefreq == 0):   # ss: the cold lnL on rank 0
            self.sync_scalars()

    def swap_all(self) -> None:
        """MC3.swap_all (with runs_local each rank decides its own runs' swaps: `decides`); then, before a
        screen line, every rank takes the heats."""
        super().swap_all()
        if self.runs_local and self.gen % self.opts.printfreq == 0:
            self.sync_heats()

    def decides(self, run: int) -> bool:
        """Every rank decides every swap (it knows every chain's scalars), but with runs_local only the
        runs it holds (every rank still draws every swap's uniforms: one shared stream)."""
        return not self.runs_local or any(r == run for r, _c in self.local)

    def sync_heats(self) -> None:
        """With runs_local: every rank takes each run's heats and swap counts from the group that holds it
        (one allgather); nothing otherwise (every rank decided every swap)."""
        if not self.runs_local:
            return
        held = sorted({r for r, _c in self.led})
        mine = {r: (self.ranks[r], self.swaps[r].tried, self.swaps[r].accepted) for r in held}
        for part in self.comm.allgather(mine):
            for r, (ranks, tried, accepted) in part.items():
                self.ranks[r][:] = ranks
                self.swaps[r].tried = [list(x) for x in tried]
                self.swaps[r].accepted = [list(x) for x in accepted]

    def trade_heat_stats(self, took: list) -> None:
        """MC3.trade_heat_stats across ranks: the accepted swaps of each run compose into one permutation of
        its chains' heat statistics; a chain whose new heat was held on another rank gets them by message
        (each rank of the holding group sends to the rank at its own place in the taker's group), as
        MrBayes' AttemptSwap sends the move info with the heat."""
        n, mine = self.opts.nchains, set(self.local)
        offset = self.rank % self.layout.sitesplit
        sends, recvs = [], []
        for r in sorted({t[0] for t in took}):
            src = list(range(n))
            for r2, a, b in took:
                if r2 == r:
                    src[a], src[b] = src[b], src[a]
            chains = self.runs[r]
            best = [ch.best_lnl for ch in chains]
            snap = {q: chains[q].heat_stats() for p, q in enumerate(src) if q != p and (r, q) in mine}
            for p, q in enumerate(src):
                if q == p:
                    continue
                tag = r * n + p
                if (r, p) not in mine:
                    chains[p].best_lnl = best[q]
                    if (r, q) in mine:
                        sends.append(self.comm.isend(snap[q], dest=self.layout.owner(r, p) + offset, tag=tag))
                elif (r, q) in mine:
                    chains[p].take_heat_stats(snap[q])
                else:
                    recvs.append((chains[p], self.layout.owner(r, q) + offset, tag))
        for ch, source, tag in recvs:
            ch.take_heat_stats(self.comm.recv(source=source, tag=tag))
        for req in sends:
            req.wait()

    # -- collectives ------------------------------------------------------------------------------
    def sync_scalars(self) -> None:
        """Every rank learns every chain's lnL, lnPr and best lnL (one allgather)."""
        share_scalars(self.comm, self.runs, self.led)

    def sync_cold(self, with_moves: bool) -> None:
        """Rank 0 receives the current cold chains' tree and values (and moves) from their holders; with
        allchains=yes also the moves of the heated chains (the .mcmc file and the summary report them)."""
        if self.runs_local:                      # no swap shared them this generation
            self.sync_scalars()
            self.sync_heats()
        mine = []
        if self.rank != 0:
            for r in range(len(self.runs)):
                ch = self.cold(r)
                if not isinstance(ch, RemoteChain) and (r, ch.index) in self.led:
                    mine.append((r, ch.index, ch.trees, ch.values, ch.moves if with_moves else None))
                for hot in self.runs[r] if with_moves and self.opts.allchains else []:
                    if hot is not ch and not isinstance(hot, RemoteChain) and (r, hot.index) in self.led:
                        mine.append((r, hot.index, None, None, hot.moves))
        got = self.comm.gather(mine, root=0)
        if self.rank != 0:
            return
        for rows in got:
            for r, c, trees, values, moves in rows:
                stub = self.runs[r][c]
                if trees is not None:
                    stub.trees, stub.values = trees, values
                if moves is not None:
                    stub.moves = moves

    # -- checkpoints (the run driver calls the CheckpointSession on rank 0; these are the collectives) ----
    def adopt_state(self) -> None:
        """Every rank takes rank 0's MC3 state (generation, heats, swap counts and stream, an ss run's step
        and power: a continuation)."""
        step = self.stepping.step if self.stepping is not None else None
        state = (self.gen, self.ranks, [t.tried for t in self.swaps], [t.accepted for t in self.swaps],
                 self.swap_rng.bit_generator.state, self.opts.power, step)
        gen, ranks, tried, accepted, rng_state, power, step = self.comm.bcast(state, root=0)
        self.gen, self.ranks, self.opts.power = gen, [list(r) for r in ranks], power
        if self.stepping is not None:
            self.stepping.step = step
        for table, t, a in zip(self.swaps, tried, accepted):
            table.tried, table.accepted = [list(x) for x in t], [list(x) for x in a]
        self.swap_rng.bit_generator.state = rng_state

    def gather_chain_states(self, capture) -> dict | None:
        """{(run, chain): capture(chain)} of every chain on rank 0 (None elsewhere), for a checkpoint (with
        every run's heats and swap counts, which rank 0 writes beside them)."""
        self.sync_heats()
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

    def diagnose(self, gen: int, mc3, **kw):
        mc3.sync_cold(with_moves=True)
        stat = self.inner.diagnose(gen, mc3, **kw) if self.inner is not None else None
        return self.comm.bcast(stat, root=0)

    def comparison_lines(self) -> list[str]:
        return self.inner.comparison_lines() if self.inner is not None else []

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()

    def __getattr__(self, name):
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)


class MpiPlacement:
    """This rank's part of a run (the run driver's placement, see mbgpu.run_driver.SerialPlacement): the
    chains it owns (Layout), its backend and GPU, RemoteChain stand-ins for the others, checkpoint
    states scattered from and gathered to rank 0, swaps by message (DistributedMC3) and the files
    written by rank 0 only (MpiSink). Raises CommandError, on every rank, when the ranks cannot hold
    the chains."""

    def __init__(self, comm, settings):
        opts = RunOptions.from_settings(settings.mcmc)
        self.comm, self.rank = comm, comm.Get_rank()
        self.layout = Layout(opts.nruns, opts.nchains, comm.Get_size(), int(settings.options.get("Sitesplit") or 1))
        self.writer = self.rank == 0
        self.led = self.layout.chains_of(self.rank) if self.layout.leader(self.rank) else []
        self.stops = StopCheck(comm)

    def agree(self, check) -> None:
        """Run the user check `check()` on rank 0; its MbgpuError is raised on every rank."""
        problem = None
        if self.writer:
            try:
                check()
            except MbgpuError as err:
                problem = err
        problem = self.comm.bcast(problem, root=0)
        if problem is not None:
            raise problem

    @contextmanager
    def guard(self):
        """Any failure in the block, on this rank, stops every rank (one line naming the rank)."""
        try:
            yield
        except BaseException as err:  # noqa: B036 -- every failure must stop all ranks, not leave them waiting
            abort(self.comm, self.rank, err)

    def chains(self, s, sets, opts, con, pars_weights=None) -> tuple[list[list], list]:
        """(runs, free parameters): this rank's chains on its backend and device, RemoteChain for the
        others; rank 0 prints the layout table. On a GPU node local rank 0 builds first.
        `pars_weights`: what starttree=parsimony scores (build_runs'; mcmc reweight, refused under MPI)."""
        factory, label, local = _backend(s, con, self.comm, self.layout, select.data_work(sets))
        labels = self.comm.gather("%s %s" % (socket.gethostname(), label), root=0)
        for line in self.layout.table(labels) if self.writer else []:
            con.print(line)
        mine = set(self.layout.chains_of(self.rank))

        def build():
            return build_runs(s, sets, opts, factory, s.options["Seed"], owned=lambda r, c: (r, c) in mine,
                              pars_weights=pars_weights)

        # a site-split group sums its start lnL over its ranks: they build together (the cubin cache is
        # safe for that), else the node's first rank would wait for a rank held at the node's barrier
        once = label.startswith("cuda") and self.layout.sitesplit == 1
        runs, params = devices.compile_once_per_node(local, build) if once else build()
        runs = [[ch if ch is not None else RemoteChain(r, c) for c, ch in enumerate(chains)]
                for r, chains in enumerate(runs)]
        return runs, params

    def restore(self, runs, ckp) -> None:
        """append=yes: rank 0 sends every rank the checkpointed states of its chains (any N on either side);
        then every rank knows every chain's starting lnL and lnPr."""
        payload = ckp.payload if self.writer else None
        if self.comm.bcast(payload is not None, root=0):
            parts = None
            if payload is not None:
                parts = [{rc: chain_state(payload, *rc) for rc in self.layout.chains_of(k)}
                         for k in range(self.comm.Get_size())]
            source = self.comm.bcast(ckp.source if payload is not None else None, root=0)
            for (r, c), sub in self.comm.scatter(parts, root=0).items():
                if not sub:
                    raise CheckpointMismatch("%s holds no state for run %d chain %d (other nruns/nchains)"
                                             % (source, r + 1, c + 1))
                restore_chain(runs[r][c], sub, "%s (run %d, chain %d)" % (source, r + 1, c + 1))
        share_scalars(self.comm, runs, self.led)

    def mc3(self, runs, opts, swap_rng, files, con) -> DistributedMC3:
        """The distributed MC3; `files` (rank 0's FileSink, None elsewhere) behind an MpiSink."""
        return DistributedMC3(runs, opts, swap_rng, MpiSink(files, self.comm), con, self.comm, self.layout,
                              self.stops)

    def adopt(self, mc3) -> None:
        """Every rank takes rank 0's MC3 state, restored there from the checkpoint."""
        mc3.adopt_state()

    def any_stop(self, flag, gen: int, pace: int) -> bool:
        """True on every rank when a stop signal had reached any rank by the check before (StopCheck's
        schedule; `pace`: this rank's generations per compiled block); the flag then holds it everywhere."""
        if not self.stops.due(gen):
            return False
        return self._adopt(flag, self.stops.check(gen, flag.signum or 0, pace))

    def settle_stop(self, flag) -> None:
        """After the last generation: the check in flight finished; a signal it carries is kept (the run
        then ends as signal-stopped runs do, on every rank)."""
        self._adopt(flag, self.stops.finish())

    @staticmethod
    def _adopt(flag, stop: int) -> bool:
        if stop and flag.signum is None:
            flag.signum = stop
        return bool(stop)

    def from_writer(self, value):
        """Rank 0's `value`, on every rank."""
        return self.comm.bcast(value, root=0)

    def chain_states(self, mc3) -> dict | None:
        """Every chain's checkpoint state on rank 0 (None elsewhere); every rank takes part."""
        return mc3.gather_chain_states(capture_chain)


def _backend(s, con, comm, layout, work: int):
    """(factory or None, device label, node communicator); the GPU is chosen per local rank (work: the
    data's size, mbgpu.likelihood.select.data_work)."""
    local = devices.local_comm(comm)
    devices.share_cores(local.Get_size())
    if s.mcmc.get("Data", "Yes") != "Yes":
        return None, "none (data=no)", local
    device, label = None, "cpu"
    if select.decide(s.options, select._cuda_available, work)[0] == "gpu":
        device, label = devices.assign_device(local.Get_rank())
    factory = select.choose_backend(s.options, con, device=device, work=work)
    if layout.sitesplit > 1:
        from mbgpu.mpi.sitesplit import split_factory

        group = comm.Split(layout.group_of(comm.Get_rank()), comm.Get_rank())
        factory = split_factory(factory, group)
    return factory, label, local
