"""Which divisions share a tree (`unlink topology=(...)`), decided as MrBayes 3.2.7a decides, and the
names MrBayes gives each tree's parameters and files.

MrBayes links two divisions' topologies when their link ids are equal (`Settings.link_ids("Topology")`),
and their branch lengths only when the topologies are linked too: `unlink topology=(all)` alone gives one
Tau{k} with its V{k} per division. Linked topologies with unlinked branch lengths (one Tau, several V,
moved by MrBayes' MultNNI) are not supported yet, nor per-tree priors (docs/plans/unlinked-trees.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import NotImplementedYet
from mbgpu.output.paramnames import part_suffix


@dataclass(frozen=True)
class TreeGroups:
    """The 1-based divisions of each tree, ordered by first division; one group: a single tree."""

    groups: tuple[tuple[int, ...], ...]
    n_divisions: int

    def __len__(self) -> int:
        return len(self.groups)

    def of_division(self, division: int) -> int:
        """The 0-based tree of a 1-based division."""
        return next(k for k, g in enumerate(self.groups) if division in g)

    def suffix(self, k: int) -> str:
        """`{1}`, `{1,3}`, `{all}` or '' (unpartitioned): what MrBayes appends to Tau, V, TL and tree."""
        return part_suffix(self.groups[k], self.n_divisions)

    def tree_file(self, stem: str, k: int, run: int, nruns: int) -> str:
        """A run's tree file: `NAME.run1.t`, or with several trees `NAME.tree2.run1.t` (`NAME.tree2.t`)."""
        tree = ".tree%d" % (k + 1) if len(self.groups) > 1 else ""
        return "%s%s%s.t" % (stem, tree, ".run%d" % (run + 1) if nruns > 1 else "")


def _groups_by_id(ids) -> list[tuple[int, ...]]:
    groups: dict[int, list[int]] = {}
    for number, i in enumerate(ids, 1):
        groups.setdefault(i, []).append(number)
    return sorted(tuple(g) for g in groups.values())


def tree_groups(settings) -> TreeGroups:
    """The trees of an analysis.

    Raises:
        NotImplementedYet: branch lengths unlinked inside a linked topology, or several trees with
            different topology or branch-length priors, or with plain `startvals tau=` (not `tau{1}=`).
    """
    n = len(settings.divisions)
    groups = _groups_by_id(settings.link_ids("Topology"))
    brlens = settings.link_ids("Brlens")
    for g in groups:
        if len({brlens[i - 1] for i in g}) > 1:
            raise NotImplementedYet("unlink brlens=(...) with a linked topology (one Tau with several V, MrBayes' "
                                    "MultNNI move) is not supported yet; 'unlink topology=(...)' unlinks both")
    out = TreeGroups(tuple(groups), n)
    if len(groups) > 1:
        _check_several(settings)
    return out


def _check_several(settings) -> None:
    """What mbgpu does not yet run with several trees."""
    for option in ("Topologypr", "Brlenspr"):
        priors = {str(d.prset[option]) for d in settings.divisions}
        if option == "Topologypr" and priors != {"Uniform"}:
            raise NotImplementedYet("prset topologypr=%s with unlinked topologies is not supported yet"
                                    % sorted(priors)[-1].lower())
        if len(priors) > 1:
            raise NotImplementedYet("different brlenspr in partitions with unlinked topologies is not "
                                    "supported yet")
    if settings.startvals.get("Tau") is not None or settings.startvals.get("V") is not None:
        raise NotImplementedYet("startvals tau=/v= given before unlink topology, for several trees, is not "
                                "supported yet: give each tree's after it (startvals tau{1}=T v{1}=T ...)")
    if any(d.prset["Ratepr"].kind != "Fixed" for d in settings.divisions):
        raise NotImplementedYet("prset ratepr=variable with unlinked topologies is not supported yet")
    if any(getattr(d, "report", {}).get(k) == "Yes" for d in settings.divisions for k in ("Siterates", "Ancstates")):
        raise NotImplementedYet("report siterates/ancstates with unlinked topologies is not supported yet")
    if settings.mcmc.get("Allcomps", "No") == "Yes":
        raise NotImplementedYet("mcmc allcomps=yes with unlinked topologies is not supported yet")
    if getattr(settings, "taxa_left_out", 0):
        raise NotImplementedYet("deleted taxa with unlinked topologies are not supported yet")
