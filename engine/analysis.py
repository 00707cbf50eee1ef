"""The `mcmc` command: build the analysis from the Settings and run it.

Now: compresses every division into site patterns (reported like MrBayes), builds the models and
likelihoods, evaluates each chain's starting state, prints `Initial log likelihoods` and writes each
run's `.p` file with its Gen-0 row. The sampler attaches here next.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from engine.errors import InputFileError
from engine.likelihood import PartitionLikelihood
from engine.model_settings import build_division_models, rate_multipliers
from engine.models import build_model
from engine.output.pfile import PFileWriter
from engine.parameters import column_names, free_parameters, parameter_values
from engine.patterns import PatternSet, division_patterns
from engine.priors import brlens_log_prior, parameter_log_prior, topology_log_prior
from engine.start_state import start_tree
from engine.tree import Tree


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


@dataclass
class Analysis:
    """What a run needs: partition likelihoods, free parameters and per-division character counts."""

    likelihoods: list[PartitionLikelihood]
    params: list
    n_chars: dict[int, float]

    def log_likelihood(self, tree: Tree) -> float:
        return float(sum(p.log_likelihood(tree) for p in self.likelihoods))

    def log_prior(self, settings, tree: Tree) -> float:
        edges = np.flatnonzero(tree.parent >= 0)
        brlenspr = settings.divisions[0].prset["Brlenspr"]
        lnp = brlens_log_prior(brlenspr, tree.brlen[edges], edges < tree.n_tips)
        lnp += topology_log_prior(tree.n_tips)
        return lnp + sum(parameter_log_prior(p, self.n_chars) for p in self.params)


def build_analysis(settings, sets: list[list[PatternSet]]) -> Analysis:
    """Models and likelihood instances for every division at the starting parameter values."""
    models = build_division_models(settings, sets)
    mult = rate_multipliers(settings)
    liks = []
    for dm in models:
        for spec, ps in zip(dm.specs, dm.pattern_sets):
            if ps.n_patterns:
                liks.append(PartitionLikelihood(ps.tip_partials(), ps.weights, build_model(spec),
                                                rate_multiplier=mult[dm.index - 1]))
    n_chars = {i: float(sum(p.weights.sum() for p in group)) for i, group in enumerate(sets, 1)}
    return Analysis(liks, free_parameters(settings), n_chars)


def chain_rng(seed: int, run: int, chain: int) -> np.random.Generator:
    """The random stream of chain (run, chain): independent of how chains are placed on ranks."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(run, chain)))


def output_stem(settings) -> str:
    name = settings.mcmc.get("Filename") or os.path.basename(settings.data_file) or "mbgpu"
    folder = settings.options.get("Dir") or ""
    return os.path.join(folder, name) if folder else name


def run_mcmc(interp) -> None:
    """Prepare the run, evaluate and report the starting states, write the Gen-0 rows."""
    s, con = interp.settings, interp.console
    if s.options.get("Seed") is None:
        s.options["Seed"] = int(time.time()) % 2147483647
        con.print("   Seed = %d" % s.options["Seed"])
    sets = division_pattern_sets(s)
    report_patterns(con, sets)
    analysis = build_analysis(s, sets)
    nruns, nchains = s.mcmc["Nruns"], s.mcmc["Nchains"]
    starts = []
    for run in range(nruns):
        con.print("   Initial log likelihoods and log prior probs for run %d:" % (run + 1))
        chains = []
        for chain in range(nchains):
            tree = start_tree(s, chain_rng(s.options["Seed"], run, chain))
            lnl, lnpr = analysis.log_likelihood(tree), analysis.log_prior(s, tree)
            con.print("      Chain %d -- %.6f -- %.6f" % (chain + 1, lnl, lnpr))
            chains.append((tree, lnl, lnpr))
        starts.append(chains)
    _write_gen0(s, analysis, starts, con)
    con.print("   mcmc: the sampler is not implemented yet in this version; wrote the starting state only")


def _write_gen0(settings, analysis: Analysis, starts, con) -> None:
    stem = output_stem(settings)
    cols = column_names(settings, analysis.params)
    values = parameter_values(analysis.params)
    sci = settings.options["Scientific"] == "Yes"
    prec = int(settings.options["Precision"])
    for run, chains in enumerate(starts):
        path = "%s.p" % stem if len(starts) == 1 else "%s.run%d.p" % (stem, run + 1)
        tree, lnl, lnpr = chains[0]
        try:
            with open(path, "w", encoding="ascii") as fh:
                w = PFileWriter(fh, _run_id(settings.options["Seed"], run), cols, scientific=sci, precision=prec)
                w.row(0, lnl, lnpr, [tree.total_length()] + values)
        except OSError as exc:
            raise InputFileError("cannot write '%s': %s" % (path, exc.strerror)) from None
        con.print("   Wrote %s" % path)


def _run_id(seed: int, run: int) -> int:
    """A 10-digit run identifier derived from the seed (MrBayes prints a random one)."""
    return int(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(run, 99))).integers(10**9, 10**10))
