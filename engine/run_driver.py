"""The one driver of an `mcmc` run, serial or under MPI (mbgpu.analysis.run_mcmc calls it).

`drive` runs the whole sequence once: compress the data, check a checkpoint's inputs, build the chains,
restore them, open the files, run MC3 with checkpoints under signal handling, print the summary. What
differs under MPI goes behind a placement: `SerialPlacement` here (every chain in this process), or
mbgpu.mpi.driver.MpiPlacement (the chains this rank owns, swaps and output by message). Checkpoints and
the FileSink are created and called here only, by the process that writes (serial, or MPI rank 0).
"""
from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext

import numpy as np

from mbgpu.analysis import adopt_run_count, division_pattern_sets, output_stem, report_patterns, run_stamp
from mbgpu.checkpoint.session import CheckpointSession
from mbgpu.deleted_taxa import analysis_settings
from mbgpu.checkpoint.signals import exit_on_stop_signals
from mbgpu import propset
from mbgpu.errors import CommandError, NotImplementedYet
from mbgpu.likelihood import select
from mbgpu.output.lock import OutputLock
from mbgpu.output.modelsummary import model_summary_lines, move_lines
from mbgpu.output.overwrite import confirm_overwrite
from mbgpu.output.write_failure import OutputWriteFailed
from mbgpu.parameters import free_parameters
from mbgpu.sampler import reweight, stepping_stone
from mbgpu.sampler.mc3 import MC3, RunOptions
from mbgpu.clock.model import clock_models
from mbgpu.sampler.move_table import build_moves
from mbgpu.sampler.setup import build_runs, fixed_topologies, tree_pattern_sets
from mbgpu.sampler.sink import FileSink
from mbgpu.tree_groups import tree_groups
from mbgpu.sampler.ss_tracker import SteppingStone


class SerialPlacement:
    """Every chain in this process: no communicator, plain MC3, the FileSink itself (see MpiPlacement)."""

    writer = True

    def agree(self, check) -> None:
        """Run the user check `check()` (under MPI: on rank 0, its error raised on every rank)."""
        check()

    def guard(self):
        """Context of the run proper (under MPI: any failure there aborts every rank)."""
        return nullcontext()

    def chains(self, s, sets, opts, con, pars_weights=None) -> tuple[list[list], list]:
        """(runs, free parameters): every chain, on the backend the options and the data's size choose
        (`pars_weights`: what starttree=parsimony scores in a reweighted run, build_runs')."""
        use_data = s.mcmc.get("Data", "Yes") == "Yes"
        factory = select.choose_backend(s.options, con, work=select.data_work(sets)) if use_data else None
        mode = "chain" if reweight.scheme(s.mcmc, opts.nchains) else "batched"   # a chain's own weights
        return build_runs(s, sets, opts, factory, s.options["Seed"], sampler_mode=mode, pars_weights=pars_weights)

    def restore(self, runs, ckp) -> None:
        """append=yes: the checkpointed state of every chain."""
        ckp.restore_chains(runs)

    def mc3(self, runs, opts, swap_rng, files, con) -> MC3:
        return MC3(runs, opts, swap_rng, files, con)

    def adopt(self, mc3) -> None:
        """Under MPI every rank takes rank 0's restored MC3 state; here the MC3 has it already."""

    def any_stop(self, flag, gen: int, pace: int) -> bool:
        """True when a stop signal arrived at generation `gen` (under MPI: on any rank by the check before,
        mbgpu.mpi.stop_check; `pace`: the sampler's generations per compiled block)."""
        return flag.signum is not None

    def settle_stop(self, flag) -> None:
        """After the run's last generation (under MPI: the stop check still in flight is finished)."""

    def from_writer(self, value):
        """The writer's `value` (under MPI: rank 0's, on every rank)."""
        return value

    def chain_states(self, mc3) -> dict | None:
        """None: the checkpoint reads the chains here (under MPI: every chain's state gathered on rank 0)."""
        return None


def placement(settings, ss=None):
    """SerialPlacement, or this rank's MpiPlacement under mpirun/srun (rank 0 sends the serving ranks
    the settings and an ss run's SsPlan). mbgpu.mpi is imported only here, so the core needs no mpi4py."""
    from mbgpu.mpi.comm import world

    comm = world()
    if comm is None:
        return SerialPlacement()
    from mbgpu.mpi.run import lead

    return lead(comm, settings, ss)


def run_mcmc(interp, ss=None) -> None:
    """The `mcmc` command on the process that reads the commands (serial, or MPI rank 0, the one that
    writes): lock the output prefix, ask before overwriting (interactive only), seeds and model summary,
    then the run. The lock is released however the run ends (a stop signal included). Deleted taxa are
    left out (the run sees mbgpu.deleted_taxa's view; its ID goes back to the session for sump/sumt).
    `ss`: the mbgpu.sampler.stepping_stone.SsPlan of an `ss` command."""
    s, con = analysis_settings(interp.settings), interp.console
    stem = output_stem(s)
    with exit_on_stop_signals(), OutputLock.acquire(stem, con.print):
        confirm_overwrite(s, stem, RunOptions.from_settings(s.mcmc).nruns, getattr(interp, "ask", None), con)
        ckp = begin(s, con)
        try:
            drive(s, con, ckp, placement(s, ss), ss)
        finally:
            interp.settings.stamp = s.stamp


def begin(s, con) -> CheckpointSession:
    """Adopt nruns for sump/sumt, read a checkpoint to continue (append=yes), fix and print the seeds and
    the model summary; the run's CheckpointSession."""
    adopt_run_count(s, sumss=True)
    ckp = CheckpointSession.begin(s, output_stem(s), con)  # append=yes: read, verify, adopt seeds
    if s.options.get("Seed") is None:
        s.options["Seed"] = int(time.time()) % 2147483647
    if s.options.get("Swapseed") is None:
        s.options["Swapseed"] = s.options["Seed"]
    con.print("   Seed = %d" % s.options["Seed"])
    con.print("   Swapseed = %d" % s.options["Swapseed"])
    params = free_parameters(s)
    groups = tree_groups(s)
    propset.check_runnable(s.propset, int(s.mcmc["Nchains"]))
    moves = propset.apply(build_moves(params, len(s.divisions), fixed_topology=fixed_topologies(s, groups),
                                      trees=groups, clocks=clock_models(s)), s.propset, 0, 0)
    for line in model_summary_lines(s, params) + [""]:
        con.print(line)
    if not moves:
        raise CommandError("every move has prob 0 (propset): MrBayes stops with 'Problem allocating usedMoves'")
    for line in move_lines(moves) + [""]:
        con.print(line)
    return ckp


def drive(s, con, ckp, place, ss=None) -> None:
    """Run the analysis of Settings `s` on this process's chains (`place`: SerialPlacement or MpiPlacement).

    `ckp`: the CheckpointSession of `begin` on the writer; None on the other MPI ranks, which get one that
    only carries the settings and the stop flag. User errors are raised before `place.guard()`.
    """
    ckp = ckp if ckp is not None else CheckpointSession(s, output_stem(s), con)
    opts = RunOptions.from_settings(s.mcmc)
    if ss is not None:
        opts = stepping_stone.run_options(opts, ss)
    sets = division_pattern_sets(s, con)
    if s.mcmc.get("Starttree") == "Parsimony" and tree_groups(s).topology and reweight.scheme(s.mcmc, opts.nchains):
        raise NotImplementedYet("mcmc reweight with starttree=parsimony and unlinked branch lengths in a linked "
                                "topology is not supported yet")
    report_patterns(con, sets, reweight.checked_intro(s.mcmc, opts.nchains, sets,
                                                      not isinstance(place, SerialPlacement),
                                                      reweight.free_rate_multiplier(free_parameters(s))))
    place.agree(lambda: ckp.check_inputs(s, sets, opts, ss))
    with place.guard():
        mc3 = start(s, con, ckp, place, sets, opts, ss)
        con.print("      Chain results (%d generations requested):" % opts.ngen)
        con.print("")
        with ckp.signals(), reported_with_checkpoint(ckp):
            try:
                mc3.run()
                place.settle_stop(ckp.stop)
                finish_checkpoint(place, ckp, mc3)
            finally:
                mc3.sink.close()
                if mc3.stepping is not None:
                    mc3.stepping.close()
        for line in mc3.summary() if place.writer else []:   # other ranks lack the cold chains' moves
            con.print(line)
    if place.writer:
        ckp.raise_if_stopped()


@contextmanager
def reported_with_checkpoint(ckp):
    """A failed output or checkpoint write ends the run saying what the last checkpoint allows."""
    try:
        yield
    except OutputWriteFailed as err:
        raise err.after_checkpoint(ckp.last_generation(), ckp.path) from None


def start(s, con, ckp, place, sets, opts, ss=None):
    """Build and restore the chains, print their starting states, open the files (writer only), build
    the MC3 and hook the checkpoints into it (and, for `ss`, its stepping-stone tracker)."""
    swap_rng = np.random.default_rng(s.options["Swapseed"])
    # MrBayes draws them from swapSeed before its start trees; a continuation takes the checkpoint's
    tree_sets = tree_pattern_sets(s, sets)
    flat = reweight.drawn_weights(s.mcmc, opts.nchains, tree_sets, swap_rng, ckp.payload)
    runs, params = place.chains(s, sets, opts, con, reweight.parsimony_weights(flat, tree_sets))
    weights = reweight.for_runs(s.mcmc, opts.nchains, runs, flat, ckp.payload)   # before the chains' states
    place.restore(runs, ckp)
    for r, chains in enumerate(runs):       # MrBayes' lines (mb-double 3.2.7a: "probs:" with one run)
        con.print("      Initial log likelihoods and log prior probs%s:" % (" for run %d" % (r + 1) if len(runs) > 1
                                                                             else ""))
        for c in chains:
            con.print("         Chain %d -- %.6f -- %.6f" % (c.index + 1, c.lnl, c.lnpr))
        con.print("")
    if ss is not None:
        for line in stepping_stone.intro_lines(ss):
            con.print(line)
    files = None
    s.stamp = run_stamp(s.options["Seed"])
    if place.writer:
        files = FileSink(s, params, output_stem(s), [s.stamp] * opts.nruns, opts, con,
                         append=ckp.prepare_outputs())
    mc3 = place.mc3(runs, opts, swap_rng, files, con)
    if weights is not None:
        mc3.set_reweighting(weights)
    if ss is not None:
        mc3.stepping = SteppingStone(ss, opts.nruns, output_stem(s), s.stamp, con, opts.mcmcdiagn,
                                     s.mcmc.get("Diagnstat") == "Maxstddev", append=ckp.resuming,
                                     writer=place.writer, n_trees=tree_groups(s).n_topologies)
    if place.writer:
        ckp.attach(mc3, files)
    place.adopt(mc3)
    mc3.after_generation = checkpoint_hook(place, ckp)
    mc3.hook_every = ckp.freq if ckp.enabled else 0     # stop signals are seen after every compiled block
    return mc3


def checkpoint_hook(place, ckp):
    """MC3's after_generation on every process: a stop signal (on any rank) or a due checkpoint brings
    every chain's state to the writer, which writes the checkpoint; its answer (True: stop) goes to all."""
    def after_generation(mc3, gen: int) -> bool:
        if not (place.any_stop(ckp.stop, gen, mc3.block_len) or (ckp.enabled and gen % ckp.freq == 0)):
            return False
        collect(place, ckp, mc3)
        return place.from_writer(ckp.after_generation(mc3, gen) if place.writer else None)

    return after_generation


def finish_checkpoint(place, ckp, mc3) -> None:
    """The end-of-run checkpoint: the writer decides whether one is due, every rank sends its states."""
    due = (ckp.enabled or ckp.stop.signum is not None) and ckp.last_written != mc3.gen
    if place.from_writer(due):
        collect(place, ckp, mc3)
    if place.writer:
        ckp.finish(mc3)


def collect(place, ckp, mc3) -> None:
    """Hand the writer's next checkpoint every chain's state (None: it captures its own chains)."""
    states = place.chain_states(mc3)
    ckp.gather = None if states is None else (lambda _mc3: states)
