"""The `mcmc` command: build the analysis from the Settings and run it.

Prints MrBayes' model summary, compresses every division into site patterns (reported like MrBayes),
chooses the likelihood backend, builds the chains, prints their starting states, runs MC3 and prints
MrBayes' end-of-run summary. sump and sumt then read as many runs as this mcmc wrote.
"""
from __future__ import annotations

import os
import time

import numpy as np

from mbgpu.output.modelsummary import model_summary_lines, move_lines
from mbgpu.parameters import free_parameters
from mbgpu.sampler.move_table import build_moves
from mbgpu.model_settings import coding, variable_characters
from mbgpu.patterns import PatternSet, division_patterns


def division_pattern_sets(settings, console=None) -> list[list[PatternSet]]:
    """Pattern sets of every division of the active partition (excluded characters left out; under Mkv
    also the characters MrBayes drops as incompatible with the coding bias, with its warning)."""
    m = settings.matrix
    out = []
    for i, d in enumerate(settings.divisions, 1):
        n_states = len(m.states(d.datatype))
        sets = division_patterns(m.masks, d.datatype, n_states, settings.included(d.columns))
        if coding(d, i) == "variable":
            kept = [variable_characters(p, m.masks) for p in sets]
            dropped = sum(len(p.columns) for p in sets) - sum(len(p.columns) for p in kept)
            if dropped and console is not None:
                console.print("      WARNING: There are %d characters incompatible with the specified\n"
                              "               coding bias. These characters will be excluded." % dropped)
            sets = kept
        out.append(sets)
    return out


def report_patterns(console, sets: list[list[PatternSet]]) -> None:
    console.print("   Compressing data matrix")
    for i, group in enumerate(sets, 1):
        console.print("      Division %d has %d unique site patterns" % (i, sum(p.n_patterns for p in group)))


def output_stem(settings) -> str:
    name = settings.mcmc.get("Filename") or os.path.basename(settings.data_file) or "mbgpu"
    folder = settings.options.get("Dir") or ""
    return os.path.join(folder, name) if folder else name


def adopt_run_count(settings) -> None:
    """sump and sumt summarise as many runs as mcmc's Nruns, set when mcmc starts as MrBayes' DoMcmc (and
    DoMcmcp) set it; a later `sump nruns=...` or `sumt nruns=...` still overrides it."""
    nruns = settings.mcmc.get("Nruns", 2)
    settings.sump["Nruns"] = nruns
    settings.sumt["Nruns"] = nruns


def run_mcmc(interp) -> None:
    """Build the chains, report their starting states, run MC3, write the files, print the summary."""
    from mbgpu.checkpoint.session import CheckpointSession
    from mbgpu.likelihood.select import choose_backend, data_work
    from mbgpu.sampler.mc3 import MC3, RunOptions
    from mbgpu.sampler.setup import build_runs
    from mbgpu.sampler.sink import FileSink

    s, con = interp.settings, interp.console
    adopt_run_count(s)
    ckp = CheckpointSession.begin(s, output_stem(s), con)  # append=yes: read, verify, adopt seeds
    if s.options.get("Seed") is None:
        s.options["Seed"] = int(time.time()) % 2147483647
    if s.options.get("Swapseed") is None:
        s.options["Swapseed"] = s.options["Seed"]
    con.print("   Seed = %d" % s.options["Seed"])
    con.print("   Swapseed = %d" % s.options["Swapseed"])
    params = free_parameters(s)
    for line in model_summary_lines(s, params) + [""] + move_lines(build_moves(params, len(s.divisions))) + [""]:
        con.print(line)
    from mbgpu.mpi.comm import world

    comm = world()    # launched by mpirun/srun: the distributed MC3 (mbgpu.mpi); None for a serial run
    if comm is not None:
        from mbgpu.mpi.run import run_mcmc_mpi

        return run_mcmc_mpi(interp, comm, ckp)
    sets = division_pattern_sets(s, con)
    report_patterns(con, sets)
    opts = RunOptions.from_settings(s.mcmc)
    ckp.check_inputs(s, sets, opts)
    factory = choose_backend(s.options, con, work=data_work(sets)) if s.mcmc.get("Data", "Yes") == "Yes" else None
    runs, params = build_runs(s, sets, opts, factory, s.options["Seed"])
    ckp.restore_chains(runs)
    for r, chains in enumerate(runs):
        con.print("   Initial log likelihoods and log prior probs for run %d:" % (r + 1))
        for c in chains:
            con.print("      Chain %d -- %.6f -- %.6f" % (c.index + 1, c.lnl, c.lnpr))
    sink = FileSink(s, params, output_stem(s), [run_stamp(s.options["Seed"])] * opts.nruns, opts, con,
                    append=ckp.prepare_outputs())
    mc3 = MC3(runs, opts, np.random.default_rng(s.options["Swapseed"]), sink, con)
    ckp.attach(mc3, sink)
    con.print("   Chain results (%d generations requested):" % opts.ngen)
    with ckp.signals():
        try:
            mc3.run()
            ckp.finish(mc3)
        finally:
            sink.close()
    for line in mc3.summary():
        con.print(line)
    ckp.raise_if_stopped()


def run_stamp(seed: int) -> int:
    """The analysis' 10-digit `[ID: ...]`, one for every file of every run as in MrBayes (which draws a
    random one); derived from the seed here, so a rerun with the same seed writes the same files."""
    return int(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, 99))).integers(10**9, 10**10))
