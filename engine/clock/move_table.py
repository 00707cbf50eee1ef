"""MrBayes 3.2.7a's move list for an analysis with clock trees, as data (measured with mb-double: `showmoves`,
`showmoves allavailable=yes`, the list printed at mcmc start, and propset's "out of range" message).

`clock_move_specs` gives the clock part in MrBayes' order: parameters in MrBayes' order of types (Tau of
every tree, V of every tree, then the clock parameters in `param_kinds.CLOCK` order, each type's parameters
by first division), and per parameter its moves in the order of MrBayes' move table (model.c). The
substitution parameters' moves (`sampler.move_table.parameter_moves`) come before all of them
(`clock_analysis_moves`). A fixed topology drops every move of Tau. Moves MrBayes gives weight 0 (listed
only by `showmoves allavailable=yes`, switched on by `propset NAME$prob=x`) are in the list with
`available=True`; kinds in `NO_KERNEL` have no kernel in mbgpu.clock. Defaults come from the kernels'
modules (one home); the tuning ranges (propset's and autotune's: MrBayes' moveType minimum/maximum of the
first tuning value, exclusive for autotune) and the kernel-less moves' defaults live here.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from mbgpu.clock import cpp_moves as cpp
from mbgpu.clock import fbd_moves as fbd
from mbgpu.clock import param_moves as pm
from mbgpu.clock import relaxed_moves as rx
from mbgpu.clock import tree_moves as tm
from mbgpu.clock.distributions import FIXED
from mbgpu.clock.fossil_spr import EXTFOSSILSPR_P_EXT, EXTFOSSILSPR_WEIGHT
from mbgpu.clock.pars_spr_clock import PARSSPRCLOCK_WARP, PARSSPRCLOCK_WEIGHT
from mbgpu.errors import NotImplementedYet
from mbgpu.output.paramnames import part_suffix
from mbgpu.param_kinds import CLOCK


@dataclass(frozen=True)
class ClockMoveSpec:
    """One move as MrBayes lists it: `name` (`NodesliderClock(V{all})`), `kind` (which kernel), `weight`
    (relative proposal probability; 0: off unless propset), `tuning` (propset's $NAME -> default),
    `target` (autotune target acceptance rate; None: not autotuned), `ranges` (tuning name -> (min, max):
    propset's range, and autotune keeps the first tuning value strictly inside it), `param` (what it moves:
    'Tau', 'V' or a `param_kinds.CLOCK` kind), `trees` (0-based trees whose state it changes: one, or every
    tree sharing a clock parameter), `available` (True: a weight-0 move only `propset` switches on)."""

    name: str
    kind: str
    weight: float
    tuning: dict
    target: float | None
    ranges: dict
    param: str
    trees: tuple[int, ...]
    available: bool = False

    @property
    def has_kernel(self) -> bool:
        return self.kind not in NO_KERNEL


@dataclass(frozen=True)
class _MoveType:
    """A row of MrBayes' move table: name head, kind, weight, tuning (name, default, min, max) rows,
    autotune target."""

    head: str
    kind: str
    weight: float
    tuning: tuple = ()
    target: float | None = None


_P_EXT = (1e-5, 0.99999)
_LAMBDA = (0.0001, 20.0)

#: the kinds mbgpu has no kernel for: weight 0 in MrBayes (only `propset NAME$prob=x` asks for them), and
#: growth, never listed
NO_KERNEL = frozenset({"extss", "localclock", "parsfossilspr", "speciation_slider", "cpp_events_multiplier",
                       "growth"})

#: per parameter (in MrBayes' order), its moves in model.c's table order (showmoves allavailable=yes and the
#: order propset gives them when switched on: tests/test_clock/test_move_table.py)
TOPOLOGY = (
    _MoveType("ExtFossilSprClock", "extfossilspr", EXTFOSSILSPR_WEIGHT, (("p_ext", EXTFOSSILSPR_P_EXT) + _P_EXT,)),
    _MoveType("ExtSprClock", "extspr", tm.EXTSPR_WEIGHT, (("p_ext", tm.EXTSPR_P_EXT) + _P_EXT,)),
    _MoveType("ExtSsClock", "extss", 0.0, (("p_ext", 0.5) + _P_EXT,)),
    _MoveType("LocalClock", "localclock", 0.0, (("lambda", 2.0 * math.log(2.0), 1e-5, 100.0),)),
    _MoveType("NNIClock", "nni", tm.NNI_WEIGHT),
    _MoveType("ParsFossilSPRClock", "parsfossilspr", 0.0, (("warp", 0.1, 0.0, 1.0),)),
    _MoveType("ParsSPRClock", "parsspr", PARSSPRCLOCK_WEIGHT, (("warp", PARSSPRCLOCK_WARP, 0.0, 1.0),)),
)
BRLENS = (
    _MoveType("AddBranch", "addbranch", fbd.ADD_BRANCH_WEIGHT),
    _MoveType("DelBranch", "delbranch", fbd.DEL_BRANCH_WEIGHT),
    _MoveType("NodesliderClock", "nodeslider", tm.NODESLIDER_WEIGHT, (("delta", tm.NODESLIDER_DELTA, 1e-6, 1.0),),
              tm.NODESLIDER_TARGET),
    _MoveType("TreeStretch", "treestretch", tm.TREESTRETCH_WEIGHT,
              (("lambda", tm.TREESTRETCH_LAMBDA, 0.0001, 2.0 * math.log(2.0)),), tm.TREESTRETCH_TARGET),
)
CLOCK_PARAMS = {
    "net_speciation": (
        _MoveType("Slider", "speciation_slider", 0.0, (("delta", 1.0, 1e-5, 100.0),), 0.25),
        _MoveType("Multiplier", "speciation", pm.SPECIATION_WEIGHT, (("lambda", pm.SPECIATION_LAMBDA, 1e-5, 20.0),),
                  pm.SPECIATION_TARGET)),
    "relative_extinction": (_MoveType("Slider", "extinction", pm.EXTINCTION_WEIGHT,
                                      (("delta", pm.EXTINCTION_DELTA, 1e-5, 20.0),), pm.EXTINCTION_TARGET),),
    "relative_fossilization": (_MoveType("Slider", "fossilization", pm.FOSSILIZATION_WEIGHT,
                                         (("delta", pm.FOSSILIZATION_DELTA, 1e-5, 20.0),), pm.FOSSILIZATION_TARGET),),
    "popsize": (_MoveType("Multiplier", "popsize", pm.POPSIZE_WEIGHT, (("lambda", pm.POPSIZE_LAMBDA, 1e-5, 100.0),),
                          pm.POPSIZE_TARGET),),
    # Multiplier(R_pop) of a free growthpr (weight 1, showmoves; range measured): mbgpu has no growthpr, so it
    # is never listed (_free)
    "growth": (_MoveType("Multiplier", "growth", 1.0, (("lambda", 2.0 * math.log(1.5)) + _LAMBDA,), 0.25),),
    "cpprate": (_MoveType("Multiplier", "cpprate", cpp.WEIGHT_CPP_RATE, (("lambda", cpp.LAMBDA_CPP) + _LAMBDA,),
                          rx.TARGET_RATE),),
    "cppevents": (
        _MoveType("Add_delete", "cpp_add_delete", cpp.WEIGHT_ADD_DELETE),
        _MoveType("Prior_draw_pos", "cpp_position", cpp.WEIGHT_DRAW_POSITION),
        _MoveType("Multiplier", "cpp_events_multiplier", 0.0, (("lambda", 2.0 * math.log(1.1)) + _LAMBDA,), 0.25),
        _MoveType("Prior_draw_mult", "cpp_multiplier", cpp.WEIGHT_DRAW_MULTIPLIER)),
    "tk02var": (_MoveType("Multiplier", "tk02var", rx.WEIGHT_TK02VAR, (("lambda", rx.LAMBDA) + _LAMBDA,),
                          rx.TARGET_RATE),),
    "tk02rates": (_MoveType("Multiplier", "tk02brlens", rx.WEIGHT_TK02_BRLENS, (("lambda", rx.LAMBDA) + _LAMBDA,),
                            rx.TARGET_RATE),),
    "igrvar": (_MoveType("Multiplier", "igrvar", rx.WEIGHT_IGRVAR, (("lambda", rx.LAMBDA) + _LAMBDA,), rx.TARGET_RATE),),
    "igrrates": (_MoveType("Multiplier", "igrbrlens", rx.WEIGHT_IGR_BRLENS, (("lambda", rx.LAMBDA) + _LAMBDA,),
                           rx.TARGET_RATE),),
    "clockrate": (_MoveType("Multiplier", "clockrate", pm.CLOCKRATE_WEIGHT, (("lambda", pm.CLOCKRATE_LAMBDA) + _LAMBDA,),
                            pm.CLOCKRATE_TARGET),),
}
#: clock parameters MrBayes keeps one of per tree (their values live on its branches)
PER_TREE = ("cppevents", "tk02rates", "igrrates")


def _free(kind: str, m) -> object | None:
    """A key equal for the trees that share clock parameter `kind` (MrBayes links them when their priors
    agree; the clock rate across every clock tree), or None where the tree has no such free parameter."""
    tree_prior = {"net_speciation": ("birthdeath", "fossilization"), "relative_extinction": ("birthdeath",
                  "fossilization"), "relative_fossilization": ("fossilization",), "popsize": ("coalescence",)}
    prior = {"net_speciation": m.speciation, "relative_extinction": m.extinction,
             "relative_fossilization": m.fossilization, "popsize": m.popsize}
    if kind in tree_prior:
        return prior[kind] if m.tree_prior in tree_prior[kind] and not prior[kind].fixed else None
    relaxed = {"cpprate": ("cpp", m.cpprate), "cppevents": ("cpp", None), "tk02var": ("tk02", m.tk02var),
               "tk02rates": ("tk02", None), "igrvar": ("igr", m.igrvar), "igrrates": ("igr", None)}
    if kind in relaxed:
        clock_var, pr = relaxed[kind]
        return None if m.clock_var != clock_var or (pr is not None and pr.fixed) else (pr or "per tree")
    if kind == "clockrate":
        return None if m.clock_rate.kind == FIXED else "shared"
    return None                 # growth (no growthpr in mbgpu), cppmultdev (fixed only)


def _spec(mt: _MoveType, inner: str, param: str, trees: tuple[int, ...]) -> ClockMoveSpec:
    return ClockMoveSpec("%s(%s)" % (mt.head, inner), mt.kind, mt.weight, {t[0]: t[1] for t in mt.tuning},
                         mt.target, {t[0]: (t[2], t[3]) for t in mt.tuning}, param, trees, mt.weight == 0.0)


def _applies(mt: _MoveType, m) -> bool:
    """MrBayes' applicability beyond the parameter: AddBranch/DelBranch need sampled ancestors (FBD but not
    samplestrat=fossiltip), LocalClock a strict clock."""
    if mt.kind in ("addbranch", "delbranch"):
        return m.tree_prior == "fossilization" and m.sample_strat != "fossiltip"
    if mt.kind == "localclock":
        return m.clock_var == "strict"
    return True


def clock_move_specs(models, n_divisions: int, suffixes=None, fixed_topology=False,
                     available: bool = False) -> list[ClockMoveSpec]:
    """The moves of the clock trees `models` (per tree its mbgpu.clock.model.ClockModel, from
    `clock_models`), in MrBayes' order. `suffixes`: per tree its `{..}` (TreeGroups.suffix; default from the
    model's divisions); `fixed_topology`: one bool or one per tree; `available`: also the weight-0 moves.

    Raises:
        NotImplementedYet: clock and unconstrained trees in one analysis.
    """
    if not any(m is not None for m in models):
        return []
    if any(m is None for m in models):
        raise NotImplementedYet("clock and unconstrained trees in one analysis are not supported yet")
    sfx = list(suffixes) if suffixes is not None else [part_suffix(m.divisions, n_divisions) for m in models]
    fixed = tuple(fixed_topology) if isinstance(fixed_topology, (tuple, list)) else (bool(fixed_topology),) * len(models)
    out = []
    for k, m in enumerate(models):
        if not fixed[k]:
            out += [_spec(mt, "Tau%s,V%s" % (sfx[k], sfx[k]), "Tau", (k,)) for mt in TOPOLOGY if _applies(mt, m)]
    for k, m in enumerate(models):
        out += [_spec(mt, "V" + sfx[k], "V", (k,)) for mt in BRLENS if _applies(mt, m)]
    for ck in CLOCK:
        for trees in _sharing(ck.kind, models):
            divisions = sorted(d for k in trees for d in models[k].divisions)
            inner = ck.title + part_suffix(divisions, n_divisions)
            out += [_spec(mt, inner, ck.kind, trees) for mt in CLOCK_PARAMS.get(ck.kind, ())]
    return [s for s in out if available or not s.available]


def _sharing(kind: str, models) -> list[tuple[int, ...]]:
    """The groups of trees with one parameter of this kind each, ordered by first tree."""
    groups: dict = {}
    for k, m in enumerate(models):
        key = _free(kind, m)
        if key is not None:
            groups.setdefault((k,) if kind in PER_TREE else key, []).append(k)
    return [tuple(g) for g in groups.values()]


def clock_analysis_moves(settings, available: bool = False) -> list:
    """The whole move list of a clock analysis as MrBayes lists it: the substitution parameters' moves
    (sampler.move_table.parameter_moves, names and weights only) then `clock_move_specs`."""
    from mbgpu.clock.model import clock_models
    from mbgpu.parameters import free_parameters
    from mbgpu.sampler.move_table import parameter_moves
    from mbgpu.sampler.setup import fixed_topologies
    from mbgpu.tree_groups import tree_groups

    groups = tree_groups(settings)
    n = len(settings.divisions)
    specs = clock_move_specs(clock_models(settings), n, [groups.suffix(k) for k in range(len(groups))],
                             fixed_topologies(settings, groups), available)
    return parameter_moves(free_parameters(settings), n) + specs
