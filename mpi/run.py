"""`mpirun -np N mbgpu file.nex`: rank 0 reads the commands, the other ranks serve its `mcmc` commands.

Rank 0 runs the normal session (screen, log, sump/sumt, the prompt). When it reaches `mcmc` it
broadcasts the Settings; every rank then builds only its own chains, and the distributed MC3 runs.
Any exception inside that phase, on any rank, prints one line naming the rank and stops the whole job
with MPI.Abort; the files and the last checkpoint written by rank 0 stay as they were.
"""
from __future__ import annotations

import socket

from mbgpu.errors import MbgpuError
from mbgpu.mpi.comm import NullConsole, abort, world

QUIT, MCMC = "quit", "mcmc"


def main(argv: list[str], run_cli) -> int:
    """Run the session `run_cli(argv)` under MPI when launched by mpirun/srun, else serially."""
    comm = world()
    if comm is None:
        return run_cli(argv)
    if comm.Get_rank() != 0:
        return serve(comm)
    try:
        return run_cli(argv)
    finally:
        comm.bcast((QUIT, None), root=0)


def serve(comm) -> int:
    """Ranks > 0: take part in every `mcmc` rank 0 starts, until it says quit."""
    while True:
        kind, settings = comm.bcast(None, root=0)
        if kind == QUIT:
            return 0
        try:
            distributed_mcmc(settings, NullConsole(), comm, None)
        except MbgpuError:
            pass   # raised identically on rank 0, which reports it


def run_mcmc_mpi(interp, comm, ckp=None) -> None:
    """The `mcmc` command under MPI, called on rank 0 (or on every rank when the CLI hook is absent).

    `ckp` is rank 0's mbgpu.checkpoint.session.CheckpointSession (None: no checkpoints).
    """
    if comm.Get_rank() != 0:     # every rank read the file itself: take rank 0's settings and seeds
        _kind, settings = comm.bcast(None, root=0)
        distributed_mcmc(settings, NullConsole(), comm, None)
        return
    s = interp.settings          # run_mcmc has fixed the seeds (and adopted a checkpoint's) already
    comm.bcast((MCMC, s), root=0)
    distributed_mcmc(s, interp.console, comm, ckp)
    if ckp is not None:
        ckp.raise_if_stopped()


def distributed_mcmc(s, con, comm, ckp) -> None:
    """Every rank: checks that fail for the user raise the same MbgpuError on every rank; then the
    analysis, where any failure on any rank aborts the job."""
    from mbgpu.analysis import division_pattern_sets, report_patterns
    from mbgpu.mpi.layout import Layout
    from mbgpu.sampler.mc3 import RunOptions

    opts = RunOptions.from_settings(s.mcmc)
    layout = Layout(opts.nruns, opts.nchains, comm.Get_size(), int(s.options.get("Sitesplit") or 1))
    sets = division_pattern_sets(s, con)
    report_patterns(con, sets)
    problem = None
    if comm.Get_rank() == 0 and ckp is not None:
        try:
            ckp.check_inputs(s, sets, opts)
        except MbgpuError as err:
            problem = err
    problem = comm.bcast(problem, root=0)
    if problem is not None:
        raise problem
    try:
        _analysis(s, con, comm, layout, opts, sets, ckp)
    except BaseException as err:  # noqa: B036 -- every failure must stop all ranks, not leave them waiting
        abort(comm, comm.Get_rank(), err)


def _backend(s, con, comm, layout, work: int):
    """(factory or None, device label, node communicator); the GPU is chosen per local rank (work: the
    data's size, mbgpu.likelihood.select.data_work)."""
    from mbgpu.likelihood.select import _cuda_available, choose_backend, decide
    from mbgpu.mpi.devices import assign_device, local_comm, share_cores

    local = local_comm(comm)
    share_cores(local.Get_size())
    if s.mcmc.get("Data", "Yes") != "Yes":
        return None, "none (data=no)", local
    device, label = None, "cpu"
    if decide(s.options, _cuda_available, work)[0] == "gpu":
        device, label = assign_device(local.Get_rank())
    factory = choose_backend(s.options, con, device=device, work=work)
    if layout.sitesplit > 1:
        from mbgpu.mpi.sitesplit import split_factory

        group = comm.Split(layout.group_of(comm.Get_rank()), comm.Get_rank())
        factory = split_factory(factory, group)
    return factory, label, local


def _build(s, sets, opts, factory, comm, layout, local, gpu: bool):
    """Build this rank's chains (others become RemoteChain); on a GPU node local rank 0 goes first."""
    from mbgpu.mpi.devices import compile_once_per_node
    from mbgpu.mpi.driver import RemoteChain
    from mbgpu.sampler.setup import build_runs

    mine = set(layout.chains_of(comm.Get_rank()))

    def build():
        return build_runs(s, sets, opts, factory, s.options["Seed"], owned=lambda r, c: (r, c) in mine)

    runs, params = compile_once_per_node(local, build) if gpu else build()
    runs = [[ch if ch is not None else RemoteChain(r, c) for c, ch in enumerate(chains)]
            for r, chains in enumerate(runs)]
    return runs, params


def _restore(runs, comm, layout, ckp) -> None:
    """append=yes: rank 0 sends every rank the checkpointed states of its chains (any N on either side)."""
    from mbgpu.checkpoint.chain_state import restore_chain
    from mbgpu.checkpoint.errors import CheckpointMismatch
    from mbgpu.checkpoint.state import chain_state

    payload = ckp.payload if comm.Get_rank() == 0 and ckp is not None else None
    if not comm.bcast(payload is not None, root=0):
        return
    parts = None
    if payload is not None:
        parts = [{rc: chain_state(payload, *rc) for rc in layout.chains_of(k)} for k in range(comm.Get_size())]
    source = comm.bcast(ckp.source if payload is not None else None, root=0)
    for (r, c), sub in comm.scatter(parts, root=0).items():
        if not sub:
            raise CheckpointMismatch("%s holds no state for run %d chain %d (other nruns/nchains)" % (source, r + 1, c + 1))
        restore_chain(runs[r][c], sub, "%s (run %d, chain %d)" % (source, r + 1, c + 1))


def _analysis(s, con, comm, layout, opts, sets, ckp) -> None:
    import numpy as np

    from mbgpu.analysis import output_stem, run_stamp
    from mbgpu.checkpoint.session import CheckpointSession
    from mbgpu.likelihood.select import data_work
    from mbgpu.mpi.driver import DistributedMC3, MpiSink
    from mbgpu.sampler.sink import FileSink

    rank = comm.Get_rank()
    factory, label, local = _backend(s, con, comm, layout, data_work(sets))
    labels = comm.gather("%s %s" % (socket.gethostname(), label), root=0)
    for line in layout.table(labels) if rank == 0 else []:
        con.print(line)
    runs, params = _build(s, sets, opts, factory, comm, layout, local, label.startswith("cuda"))
    _restore(runs, comm, layout, ckp)
    inner = None
    if rank == 0:
        append = ckp.prepare_outputs() if ckp is not None else False
        inner = FileSink(s, params, output_stem(s), [run_stamp(s.options["Seed"])] * opts.nruns,
                         opts, con, append=append)
    ckp = ckp if ckp is not None else CheckpointSession(s, output_stem(s), con)
    mc3 = DistributedMC3(runs, opts, np.random.default_rng(s.options["Swapseed"]), MpiSink(inner, comm), con,
                         comm, layout)
    mc3.attach_checkpoints(ckp, inner)
    mc3.sync_scalars()
    for r, chains in enumerate(runs):
        con.print("   Initial log likelihoods and log prior probs for run %d:" % (r + 1))
        for c in chains:
            con.print("      Chain %d -- %.6f -- %.6f" % (c.index + 1, c.lnl, c.lnpr))
    con.print("   Chain results (%d generations requested):" % opts.ngen)
    with ckp.signals():
        try:
            mc3.run()
            mc3.finish_checkpoints()
        finally:
            mc3.sink.close()
    for line in mc3.summary() if rank == 0 else []:   # the others lack the cold chains' moves
        con.print(line)
