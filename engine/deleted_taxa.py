"""MrBayes' `delete`/`restore`: an analysis over the included taxa only.

The session's Settings keep every taxon (so `restore` and the taxon numbers of later commands work as
in MrBayes); `analysis_settings` gives the `mcmc` command a view of them over the included taxa: the
matrix rows, the outgroup (the first included taxon when the outgroup is deleted, as MrBayes roots
then), taxsets and constraints renumbered without the deleted taxa, and the user trees the run starts
from pruned to the included ones (a node left with two branches joined into one, lengths added; the
Gen-0 lnL and tree length are mb-double's). MrBayes' gammadir prior counts the deleted taxa in its
Dirichlet constant: `gammadir_constant` adds what it adds for a = c = 1 (a constant: the posterior is
the same); other a, c are refused, as mbgpu does not reproduce what MrBayes computes there.
"""
from __future__ import annotations

import dataclasses
import math

from mbgpu.constraints import Constraint
from mbgpu.errors import NotImplementedYet
from mbgpu.settings import Settings, TreeRecord
from mbgpu.start_state import user_tree


def analysis_settings(s: Settings, trees: set = frozenset(), for_run: bool = True) -> Settings:
    """`s` itself when no taxon is deleted, else a view over the included taxa (shares the option dicts,
    so what the run sets there, seeds and sump/sumt nruns, reaches the session). `trees`: user trees to
    prune besides those the run starts from; `for_run=False`: a view for a command's checks only."""
    if not s.deleted:
        return s
    if for_run:
        _check_brlens_prior(s)
    keep = [i for i in range(s.matrix.ntax) if i not in s.deleted]
    new = {old: i for i, old in enumerate(keep)}
    m = s.matrix
    matrix = dataclasses.replace(m, taxa=[m.taxa[i] for i in keep], masks=m.masks[keep],
                                 blank=None if m.blank is None else m.blank[keep])

    def taxa(group: frozenset) -> frozenset:
        return frozenset(new[t] for t in group if t in new)

    constraints = {k: Constraint(c.name, c.kind, taxa(c.taxa), taxa(c.other)) for k, c in s.constraints.items()}
    return dataclasses.replace(
        s, matrix=matrix, outgroup=new.get(s.outgroup, 0), taxsets={k: taxa(v) for k, v in s.taxsets.items()},
        constraints=constraints, calibrations=_calibrations(s, taxa, for_run),
        trees=_pruned_trees(s, keep, set(trees)), deleted=frozenset(), taxa_left_out=len(s.deleted))


def _calibrations(s: Settings, taxa, for_run: bool) -> dict:
    """`calibrate` ages over the included taxa (tips and constraint clades renumbered).

    Raises:
        NotImplementedYet: a calibrated tip that is deleted (what MrBayes does with it was not measured).
    """
    out = {}
    for k, c in s.calibrations.items():
        kept = taxa(c.taxa)
        if c.tip and not kept:
            if for_run:
                raise NotImplementedYet("calibrate of the deleted taxon %s is not supported yet" % c.name)
            continue
        out[k] = dataclasses.replace(c, taxa=kept)
    return out


def _pruned_trees(s: Settings, keep: list[int], extra: set) -> dict[str, TreeRecord]:
    """The trees a run may start from (startvals, topologypr=fixed) and `extra` over the included taxa."""
    fixed = {d.prset["Topologypr"].args[0] for d in s.divisions
             if "Topologypr" in d.prset and d.prset["Topologypr"].kind == "Fixed"}     # every tree's
    starts = {v for k, v in s.startvals.items() if k.split("{")[0] in ("Tau", "V")}    # Tau, Tau{1}, V{2} ...
    used = (starts | fixed | extra) - {None}
    out = dict(s.trees)
    names = [s.matrix.taxa[i] for i in keep]
    for name in used & set(s.trees):
        full = user_tree(s, name)                      # over every taxon of the matrix, checked there
        out[name] = TreeRecord(name, full.keep_tips(keep).to_newick(names), {}, s.trees[name].where)
    return out



def _gammadir(brlenspr):
    sub = getattr(brlenspr, "sub", None)
    return sub if brlenspr is not None and brlenspr.kind == "Unconstrained" and sub is not None \
        and sub.kind == "GammaDir" else None


def _check_brlens_prior(s: Settings) -> None:
    """gammadir(aT, bT, a, c) with deleted taxa: only a = c = 1 (MrBayes' prior, measured with mb-double,
    then differs from the included taxa' by log Gamma(2N-3) - log Gamma(2n-3); with other a or c by
    amounts that depend on the branch lengths, which mbgpu does not reproduce)."""
    for d in s.divisions:
        sub = _gammadir(d.prset.get("Brlenspr"))
        if sub is not None and [float(x) for x in sub.args[2:]] != [1.0, 1.0]:
            raise NotImplementedYet("brlenspr=unconstrained:gammadir(%s) with deleted taxa is not supported yet "
                                    "(only a = c = 1: MrBayes' prior counts the deleted taxa otherwise)"
                                    % ",".join("%g" % float(x) for x in sub.args))


def gammadir_constant(brlenspr, n_tips: int, left_out: int) -> float:
    """What MrBayes 3.2.7a adds to the log prior of a tree of n_tips under gammadir(aT, bT, 1, 1) when
    `left_out` taxa are deleted: its Dirichlet constant is log Gamma(2N-3) for all N taxa of the matrix
    instead of log Gamma(2n-3) (measured with mb-double); 0 without deleted taxa or gammadir."""
    if not left_out or _gammadir(brlenspr) is None:
        return 0.0
    return math.lgamma(2 * (n_tips + left_out) - 3) - math.lgamma(2 * n_tips - 3)
