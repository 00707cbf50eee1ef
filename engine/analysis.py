"""The `mcmc` command: build the analysis from the Settings and run it.

Compresses every division into site patterns (reported like MrBayes), chooses the likelihood backend,
builds the chains, prints their starting states, runs MC3 and prints MrBayes' end-of-run summary.
"""
from __future__ import annotations

import os
import time

import numpy as np

from mbgpu.patterns import PatternSet, division_patterns


def division_pattern_sets(settings) -> list[list[PatternSet]]:
    """Pattern sets of every division of the active partition (excluded characters left out)."""
    m = settings.matrix
    out = []
    for d in settings.divisions:
        n_states = len(m.states(d.datatype))
        out.append(division_patterns(m.masks, d.datatype, n_states, settings.included(d.columns)))
    return out


def report_patterns(console, sets: list[list[PatternSet]]) -> None:
    console.print("   Compressing data matrix")
    for i, group in enumerate(sets, 1):
        console.print("      Division %d has %d unique site patterns" % (i, sum(p.n_patterns for p in group)))


def output_stem(settings) -> str:
    name = settings.mcmc.get("Filename") or os.path.basename(settings.data_file) or "mbgpu"
    folder = settings.options.get("Dir") or ""
    return os.path.join(folder, name) if folder else name


def run_mcmc(interp) -> None:
    """Build the chains, report their starting states, run MC3, write the files, print the summary."""
    from mbgpu.checkpoint.session import CheckpointSession
    from mbgpu.likelihood.select import choose_backend
    from mbgpu.sampler.mc3 import MC3, RunOptions
    from mbgpu.sampler.setup import build_runs
    from mbgpu.sampler.sink import FileSink

    s, con = interp.settings, interp.console
    ckp = CheckpointSession.begin(s, output_stem(s), con)  # append=yes: read, verify, adopt seeds
    if s.options.get("Seed") is None:
        s.options["Seed"] = int(time.time()) % 2147483647
    if s.options.get("Swapseed") is None:
        s.options["Swapseed"] = s.options["Seed"]
    con.print("   Seed = %d" % s.options["Seed"])
    con.print("   Swapseed = %d" % s.options["Swapseed"])
    from mbgpu.mpi.comm import world

    comm = world()    # launched by mpirun/srun: the distributed MC3 (mbgpu.mpi); None for a serial run
    if comm is not None:
        from mbgpu.mpi.run import run_mcmc_mpi

        return run_mcmc_mpi(interp, comm, ckp)
    sets = division_pattern_sets(s)
    report_patterns(con, sets)
    opts = RunOptions.from_settings(s.mcmc)
    ckp.check_inputs(s, sets, opts)
    factory = choose_backend(s.options, con) if s.mcmc.get("Data", "Yes") == "Yes" else None
    runs, params = build_runs(s, sets, opts, factory, s.options["Seed"])
    ckp.restore_chains(runs)
    for r, chains in enumerate(runs):
        con.print("   Initial log likelihoods and log prior probs for run %d:" % (r + 1))
        for c in chains:
            con.print("      Chain %d -- %.6f -- %.6f" % (c.index + 1, c.lnl, c.lnpr))
    sink = FileSink(s, params, output_stem(s), [_run_id(s.options["Seed"], r) for r in range(opts.nruns)], opts, con,
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


def _run_id(seed: int, run: int) -> int:
    """A 10-digit run identifier derived from the seed (MrBayes prints a random one)."""
    return int(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(run, 99))).integers(10**9, 10**10))
