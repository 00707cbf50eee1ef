"""The `mcmc` command's data and naming: site patterns per division (reported like MrBayes), the output
stem, the run count sump and sumt adopt, the files' run ID. The run itself, serial or under MPI, is
mbgpu.run_driver (`run_mcmc` here is the entry the command handler calls).
"""
from __future__ import annotations

import os

import numpy as np

from mbgpu.commands.char_cmds import pending_ctypes
from mbgpu.model_settings import coding, variable_characters
from mbgpu.patterns import PatternSet, division_patterns


def division_pattern_sets(settings, console=None) -> list[list[PatternSet]]:
    """Pattern sets of every division of the active partition (excluded characters left out; under Mkv
    also the characters MrBayes drops as incompatible with the coding bias, with its warning)."""
    m = settings.matrix
    note = pending_ctypes(settings)
    if note and console is not None:
        console.print(note)
    out = []
    for i, d in enumerate(settings.divisions, 1):
        n_states = len(m.states(d.datatype))
        sets = division_patterns(m.masks, d.datatype, n_states, settings.included(d.columns),
                                 ordered=settings.ordered_model, blank=m.blank)
        if coding(d, i) == "variable":
            kept = [variable_characters(p, m.masks) for p in sets]
            dropped = sum(len(p.columns) for p in sets) - sum(len(p.columns) for p in kept)
            if dropped and console is not None:
                console.print("      WARNING: There are %d characters incompatible with the specified\n"
                              "               coding bias. These characters will be excluded." % dropped)
            sets = kept
        out.append(sets)
    return out


def report_patterns(console, sets: list[list[PatternSet]], before_counts: list[str] = ()) -> None:
    """The data's compression; `before_counts`: lines MrBayes prints just before the pattern counts (mcmc
    reweight's)."""
    console.print("   Compressing data matrix")
    for line in before_counts:
        console.print(line)
    for i, group in enumerate(sets, 1):
        console.print("      Division %d has %d unique site patterns" % (i, sum(p.n_patterns for p in group)))


def output_stem(settings) -> str:
    name = settings.mcmc.get("Filename") or os.path.basename(settings.data_file) or "mbgpu"
    folder = settings.options.get("Dir") or ""
    return os.path.join(folder, name) if folder else name


def adopt_run_count(settings, sumss: bool = False) -> None:
    """sump and sumt summarise as many runs as mcmc's Nruns, set when mcmc starts as MrBayes' DoMcmc (and
    DoMcmcp) set it, and sumss too when a run starts (DoMcmc, not DoMcmcp); a later `sump nruns=...`
    (sumt, sumss) still overrides it. A run with several trees (`unlink topology`) also sets sumt's
    ntrees to their number (one tree leaves it as it was, as in MrBayes 3.2.7a)."""
    from mbgpu.tree_groups import tree_groups

    nruns = settings.mcmc.get("Nruns", 2)
    settings.sump["Nruns"] = nruns
    settings.sumt["Nruns"] = nruns
    if sumss:
        settings.sumss["Nruns"] = nruns
        n_trees = len(tree_groups(settings))
        if n_trees > 1:
            settings.sumt["Ntrees"] = n_trees


def run_mcmc(interp, ss=None) -> None:
    """The `mcmc` command (`ss`: an `ss` command's SsPlan): the one run driver, serial or under MPI
    (mbgpu.run_driver)."""
    from mbgpu.run_driver import run_mcmc as drive_mcmc   # here, not at the top: the driver imports this module

    drive_mcmc(interp, ss)


def run_stamp(seed: int) -> str:
    """The analysis' 10-digit `[ID: ...]`, one for every file of every run as in MrBayes (which draws a
    random one, leading zeros kept); derived from the seed here, so a rerun with the same seed writes the
    same files."""
    return "%010d" % np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0, 99))).integers(10**9, 10**10)
