"""Everything the commands have set: data, character sets, partitions, models, priors, run options.

One `Settings` per session, built and changed only by the interpreter's command handlers. It is plain data:
it starts from the defaults the command table gives it (mbgpu.commands.table.table_defaults) and knows no
command.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mbgpu.charmatrix import CharacterMatrix
from mbgpu.errors import NotImplementedYet


@dataclass
class Division:
    """One division of the active partition: its columns, datatype and model/prior settings."""

    columns: np.ndarray
    datatype: str
    lset: dict[str, Any]
    prset: dict[str, Any]
    report: dict[str, Any] = field(default_factory=dict)   # `report` options set for this division


@dataclass
class TreeRecord:
    """A tree of a trees block: its newick text and the translate table in force for it."""

    name: str
    newick: str
    translate: dict[str, str]
    where: Any = None


SS_ONLY = ("Alpha", "Burninss", "Nsteps", "Fromprior")   # ss' parameters that mcmc lacks


@dataclass
class Settings:
    """The state of one mbgpu session."""

    defaults: dict[str, dict[str, Any]]   # lower-case command -> parameter -> default (from the table)
    options: dict[str, Any] = field(default_factory=dict)  # `set`
    mcmc: dict[str, Any] = field(default_factory=dict)
    sump: dict[str, Any] = field(default_factory=dict)
    sumt: dict[str, Any] = field(default_factory=dict)
    ss: dict[str, Any] = field(default_factory=dict)     # ss/ssp's own: alpha, burninss, nsteps, fromprior
    sumss: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    matrix: CharacterMatrix | None = None
    data_file: str = ""
    charsets: dict[str, list[int]] = field(default_factory=dict)
    partitions: dict[str, list[list[int]]] = field(default_factory=dict)
    partition: str = "Default"
    divisions: list[Division] = field(default_factory=list)
    # MrBayes' link table: link/unlink name ('Shape') -> link-group id per division (first-appearance
    # order from 0); a name not here has every division in group 0 (linked, the default)
    unlinked: dict[str, tuple[int, ...]] = field(default_factory=dict)
    startvals: dict[str, Any] = field(default_factory=dict)
    startvals_grid: Any = None     # (runs, chains) the startvals trees apply to (MrBayes' grid, see do_mcmc)
    outgroup: int = 0
    sumt_outgroup: int = 0     # MrBayes' localOutGroup as the last sumt left it: mbgpu.summary.outgroup
    trees: dict[str, TreeRecord] = field(default_factory=dict)
    excluded: set = field(default_factory=set)  # 0-based excluded columns
    taxsets: dict[str, frozenset] = field(default_factory=dict)   # lower-case name -> 0-based taxa
    constraints: dict[str, Any] = field(default_factory=dict)     # lower-case name -> mbgpu.constraints.Constraint
    calibrations: dict[str, Any] = field(default_factory=dict)    # lower-case name -> mbgpu.clock.model.Calibration
    stored: list = field(default_factory=list)  # commands kept for later (constraint, calibrate, ...)
    stamp: str = ""                             # the ID of this session's last mcmc (sump/sumt write it)
    # `ctype ordered` (0-based standard columns): the character table's, and the model's as of the last
    # command that makes MrBayes' model take the table in (mbgpu.commands.char_cmds)
    ordered: frozenset = frozenset()
    ordered_model: frozenset = frozenset()
    deleted: frozenset = frozenset()            # `delete`d taxa (0-based); mbgpu.deleted_taxa
    taxa_left_out: int = 0                      # in the analysis view of mbgpu.deleted_taxa: how many
    propset: list = field(default_factory=list)  # mbgpu.propset.MoveSetting, in command order

    @classmethod
    def fresh(cls, defaults: dict[str, dict[str, Any]]) -> "Settings":
        """Settings at their defaults: `defaults` maps each command to its parameters' defaults."""
        s = cls(defaults)
        s.options = dict(defaults["set"])
        s.mcmc = dict(defaults["mcmc"])
        s.sump = dict(defaults["sump"])
        s.sumt = dict(defaults["sumt"])
        s.ss = {k: v for k, v in defaults["ss"].items() if k in SS_ONLY}
        s.sumss = dict(defaults["sumss"])
        s.report = dict(defaults["report"])
        return s

    def new_division(self, columns: np.ndarray, datatype: str) -> Division:
        lset = {k: v for k, v in self.defaults["lset"].items() if k != "Applyto"}
        prset = {k: v for k, v in self.defaults["prset"].items() if k != "Applyto"}
        return Division(np.asarray(columns, dtype=np.int64), datatype, lset, prset)

    def set_data(self, matrix: CharacterMatrix, data_file: str) -> None:
        """New data: forget character sets, partitions, models and trees tied to the old data."""
        self.matrix, self.data_file = matrix, data_file
        self.charsets, self.partitions, self.unlinked, self.startvals = {}, {}, {}, {}
        self.startvals_grid, self.propset = None, []
        self.outgroup, self.excluded, self.stored, self.sumt_outgroup = 0, set(), [], 0
        self.taxsets, self.constraints, self.calibrations = {}, {}, {}
        self.ordered, self.ordered_model, self.deleted = frozenset(), frozenset(), frozenset()
        self.partitions["Default"] = default_partition(matrix)
        self.activate("Default")

    def activate(self, name: str) -> None:
        """Make partition `name` active; every division starts from default model settings, every
        parameter linked (MrBayes' SetModelDefaults)."""
        assert self.matrix is not None
        self.partition = name
        self.divisions, self.unlinked = [], {}
        for cols in self.partitions[name]:
            arr = np.asarray(cols, dtype=np.int64)
            kinds = {self.matrix.datatypes[j] for j in cols}
            assert len(kinds) == 1, "a division must hold one datatype (checked when defined)"
            self.divisions.append(self.new_division(arr, kinds.pop()))

    def link_ids(self, name: str) -> tuple[int, ...]:
        """The link-group id of every division for parameter `name` (equal ids: may be shared)."""
        return self.unlinked.get(name, (0,) * len(self.divisions))

    def unlink(self, name: str, numbers) -> None:
        """MrBayes' `unlink`: each listed (1-based) division gets a group of its own."""
        ids = list(self.link_ids(name))
        for i in numbers:
            ids[i - 1] = max(ids) + 1
        self._set_links(name, ids)

    def link(self, name: str, numbers) -> None:
        """MrBayes' `link`: the listed (1-based) divisions get one new common group."""
        ids = list(self.link_ids(name))
        fresh = max(ids) + 1
        for i in numbers:
            ids[i - 1] = fresh
        self._set_links(name, ids)

    def _set_links(self, name: str, ids: list[int]) -> None:
        """Store ids renumbered by first appearance (one form per grouping; none when all linked)."""
        order: dict[int, int] = {}
        canonical = tuple(order.setdefault(i, len(order)) for i in ids)
        if any(canonical):
            self.unlinked[name] = canonical
        else:
            self.unlinked.pop(name, None)

    def included(self, columns: np.ndarray) -> np.ndarray:
        """The columns of `columns` that are not excluded."""
        if not self.excluded:
            return columns
        return columns[~np.isin(columns, np.fromiter(self.excluded, dtype=np.int64))]

    def reset_start_values(self) -> None:
        """Forget every `startvals` value: MrBayes 3.2.7a rebuilds the model after any lset, prset, link or
        unlink, and its start values with it (measured: trees and alpha given before are not used)."""
        self.startvals = {}
        self.startvals_grid = None

    def startval(self, name: str):
        """A `startvals` value, or None; model parameters' are ignored under `mcmc startparams=reset`
        (MrBayes resets them to their defaults and keeps the start trees)."""
        if name not in ("Tau", "V") and self.mcmc.get("Startparams", "Current") == "Reset":
            return None
        return self.startvals.get(name)

    def topology_prior(self, divisions=None):
        """`prset topologypr` (a PriorValue: Uniform, Fixed(TREE) or Constraints(NAME, ...)) of the 0-based
        `divisions` (None: all; with several trees those of one Tau), or None.

        Raises:
            NotImplementedYet: those divisions' topology priors differ (a topology per division).
        """
        divs = self.divisions if divisions is None else [self.divisions[i] for i in divisions]
        kinds = {str(d.prset["Topologypr"]) for d in divs if "Topologypr" in d.prset}
        if len(kinds) > 1:
            raise NotImplementedYet("topologypr %s in partitions sharing one topology is not supported yet "
                                    "(unlink their topologies)" % " and ".join(sorted(k.lower() for k in kinds)))
        return next((d.prset["Topologypr"] for d in divs if "Topologypr" in d.prset), None)

    def fixed_topology(self, divisions=None) -> str | None:
        """The user tree that `prset topologypr=fixed(NAME)` fixes the topology of the 0-based `divisions`
        to (None: all divisions; the result None: not fixed)."""
        pr = self.topology_prior(divisions)
        return pr.args[0] if pr is not None and pr.kind == "Fixed" else None

    def division_indices(self, applyto) -> list[int]:
        """0-based divisions named by an `applyto` value ('all' or 1-based numbers)."""
        if applyto == "all" or applyto is None:
            return list(range(len(self.divisions)))
        return [i - 1 for i in applyto]


def default_partition(matrix: CharacterMatrix) -> list[list[int]]:
    """MrBayes' default: one division per datatype, in order of first appearance."""
    order: list[str] = []
    groups: dict[str, list[int]] = {}
    for j, dt in enumerate(matrix.datatypes):
        if dt not in groups:
            order.append(dt)
            groups[dt] = []
        groups[dt].append(j)
    return [groups[dt] for dt in order]
