"""The `mcmc` command: build the analysis from the Settings and run it.

Now: compresses every division into site patterns and reports them like MrBayes; the likelihood
(initial lnL, Gen-0 row) and the sampler attach here.
"""
from __future__ import annotations

from engine.patterns import PatternSet, division_patterns


def division_pattern_sets(settings) -> list[list[PatternSet]]:
    """Pattern sets of every division of the active partition."""
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


def run_mcmc(interp) -> None:
    """Prepare the data for the run and report it; the run itself comes with the sampler."""
    sets = division_pattern_sets(interp.settings)
    report_patterns(interp.console, sets)
    interp.console.print("   mcmc: settings stored; sampling is not implemented yet in this version")
