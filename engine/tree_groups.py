"""Which divisions share a tree (`unlink topology=(...)`), decided as MrBayes 3.2.7a decides, and the
names MrBayes gives each tree's parameters and files.

MrBayes links two divisions' topologies when their link ids are equal (`Settings.link_ids("Topology")`)
and so are their topology priors, and their branch lengths only when the topologies are linked too (and
their brlens priors equal): `unlink topology=(all)` alone gives one Tau{k} with its V{k} per division.
Branch lengths unlinked inside a linked topology (`unlink brlens=(all)`) give one tree per V group that
share one Tau: their topologies stay identical (MrBayes' MultNNI moves them all). Each Tau takes the
topology prior of its divisions (`prset applyto=(k) topologypr=...`)."""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import NotImplementedYet
from mbgpu.output.paramnames import part_suffix


@dataclass(frozen=True)
class TreeGroups:
    """The 1-based divisions of each tree (one per V), ordered by first division; one group: a single
    tree. `topology[k]`: the 0-based Tau of tree k (empty: each tree its own)."""

    groups: tuple[tuple[int, ...], ...]
    n_divisions: int
    topology: tuple[int, ...] = ()

    def tau(self, k: int) -> int:
        """The 0-based topology (Tau) of tree k."""
        return self.topology[k] if self.topology else k

    @property
    def n_topologies(self) -> int:
        return len(set(self.topology)) if self.topology else len(self.groups)

    def sharing(self, t: int) -> tuple[int, ...]:
        """The trees of topology t."""
        return tuple(k for k in range(len(self.groups)) if self.tau(k) == t)

    def firsts(self) -> list[int]:
        """Each topology's first tree (the one its split frequencies are counted on)."""
        return [self.sharing(t)[0] for t in range(self.n_topologies)]

    def tau_divisions(self, k: int) -> list[int]:
        """The 0-based divisions of tree k's Tau (its own and those of every tree sharing it): whose
        `prset topologypr` is the tree's topology prior."""
        return sorted(d - 1 for j in self.sharing(self.tau(k)) for d in self.groups[j])

    def tau_suffix(self, k: int) -> str:
        """The suffix of tree k's Tau: its divisions and those of every tree sharing it."""
        return part_suffix([d + 1 for d in self.tau_divisions(k)], self.n_divisions)

    def param_name(self, k: int) -> str:
        """The `[Param: ...]` of tree k's .t file: `tree` and its suffix; MrBayes writes `tree{1}` in every
        file of trees sharing one topology (a quirk)."""
        return "tree" + (self.suffix(self.sharing(self.tau(k))[0]) if len(self.sharing(self.tau(k))) > 1
                         else self.suffix(k))

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


def tree_link_ids(settings, name: str) -> tuple:
    """Each division's id for `Topology` or `Brlens`: MrBayes shares a Tau (a V) only between divisions
    whose link ids are equal AND whose topologypr (brlenspr) are the same (IsModelSame), so `prset
    applyto=(1) topologypr=constraints(c)` alone gives Tau{1} and Tau{2,3}."""
    option = {"Topology": "Topologypr", "Brlens": "Brlenspr"}[name]
    return tuple((i, str(d.prset.get(option))) for i, d in zip(settings.link_ids(name), settings.divisions))


def tree_groups(settings) -> TreeGroups:
    """The trees of an analysis.

    Raises:
        NotImplementedYet: `nperts` with branch lengths unlinked inside a linked topology. (Plain
            `startvals tau=/v=` given before the unlink cannot reach here: the unlink forgets them.)
    """
    n = len(settings.divisions)
    taus = _groups_by_id(tree_link_ids(settings, "Topology"))
    brlens = tree_link_ids(settings, "Brlens")
    trees, topology = [], []
    for t, g in enumerate(taus):
        for v in _groups_by_id([(brlens[i - 1] if i in g else -1) for i in range(1, n + 1)]):
            if v[0] in g:
                trees.append(v)
                topology.append(t)
    order = sorted(range(len(trees)), key=lambda k: trees[k])
    trees, topology = [trees[k] for k in order], [topology[k] for k in order]
    out = TreeGroups(tuple(trees), n, tuple(topology) if len(trees) > len(taus) else ())
    if len(trees) > 1:
        _check_several(settings, out)
    return out


def _check_several(settings, trees: TreeGroups) -> None:
    """What mbgpu does not yet run with several trees."""
    for k in range(len(trees)):
        settings.topology_prior(trees.tau_divisions(k))       # one prior per Tau (else refused there)
    if trees.topology and int(settings.mcmc.get("Nperts", 0)):      # MrBayes perturbs each V's tree on its own:
        raise NotImplementedYet("mcmc nperts with unlinked branch lengths in a linked topology is not supported "
                                "yet (MrBayes 3.2.7a perturbs each V's tree on its own, so trees sharing one "
                                "topology start from different topologies)")
