"""Names of an analysis' parameters as MrBayes 3.2.7a writes them, in one place: the `.p` header's
column labels and the parameters of the model summary (`showmodel`, the start of `mcmc`).

MrBayes names a parameter of a partitioned analysis with the divisions that share it: `{all}` when
every division shares it, `{1,2}` when some do (`alpha{1,2}`, `Pi{all}`); without partitions there is
no suffix. The rate multipliers are the exception in the `.p` file: one column per division, `m{1}`.

Which divisions share a parameter (free or fixed) is decided by `mbgpu.parameters.link_groups`.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.datatypes import DNA
from mbgpu.output import report_formats
from mbgpu.param_kinds import CLOCK, CLOCK_KIND, KIND, MULTIPLIERS, PARAMS, TREE
from mbgpu.parameters import is_free, link_groups

_AA3 = ("Ala", "Arg", "Asn", "Asp", "Cys", "Gln", "Glu", "Gly", "His", "Ile", "Leu", "Lys", "Met", "Phe", "Pro",
        "Ser", "Thr", "Trp", "Tyr", "Val")


def part_suffix(divisions, n_divisions: int) -> str:
    """`{all}`, `{1,3}` or '' (unpartitioned data), as MrBayes appends it to names and labels.

    >>> part_suffix((1, 2, 3), 3), part_suffix((2, 3), 3), part_suffix((1,), 1)
    ('{all}', '{2,3}', '')
    """
    divisions = tuple(divisions)
    if n_divisions <= 1:
        return ""
    if len(divisions) == n_divisions:
        return "{all}"
    return "{%s}" % ",".join(map(str, divisions))


def labels(kind: str, datatype: str) -> list[str]:
    """The `.p` labels of one parameter without suffix (RNA too is labelled A C G T, like MrBayes)."""
    column = KIND[kind].column
    if column.count("%s") == 2:
        return [column % (DNA[i], DNA[j]) for i in range(4) for j in range(i + 1, 4)]
    if column.count("%s") == 1:
        return [column % x for x in (_AA3 if datatype == "protein" else DNA)]
    return [column]


def pfile_columns(settings, params) -> list[str]:
    """The `.p` header after `Gen LnL LnPr`: `TL`, then every free parameter's labels, in `params` order."""
    return [c for c in pfile_header(settings, params) if c]


def pfile_header(settings, params) -> list[str]:
    """pfile_columns as MrBayes 3.2.7a's header line spells them: an empty label (a second tab, with no
    column in the rows) between two rate-multiplier parameters, as mb-double writes
    `m{1}<tab><tab>m{2}` for {1} then {2}, and `m{1}<tab>m{2}<tab><tab>m{3}<tab>m{4}` for {1,2} then {3,4}."""
    from mbgpu.tree_groups import tree_groups

    n = len(settings.divisions)
    trees = tree_groups(settings)
    cols = ["TL" + trees.suffix(k) for k in range(len(trees))]
    after_multipliers = False
    for p, fmt in zip(params, report_formats.formats(settings, params)):
        if KIND[p.kind].form == MULTIPLIERS:
            cols += [""] * after_multipliers + [KIND[p.kind].column % d for d in p.divisions]
        else:
            datatype = settings.divisions[p.divisions[0] - 1].datatype
            names = report_formats.labels(p.kind, fmt, labels(p.kind, datatype))
            cols += [lab + part_suffix(p.divisions, n) for lab in names]
        after_multipliers = KIND[p.kind].form == MULTIPLIERS
    return cols


@dataclass(frozen=True)
class ModelParameter:
    """One parameter of the model summary: free (in the `.p` file) or fixed, with the divisions sharing it."""

    kind: str
    divisions: tuple[int, ...]
    prior: object          # the PriorValue of its first division
    free: bool             # estimated (in the `.p` file, unless a rate multiplier of one division)
    datatype: str          # of its first division ('standard' statefreq is MrBayes' Alpha_symdir)

    def name(self, n_divisions: int) -> str:
        kind = CLOCK_KIND.get(self.kind) or KIND[self.kind]
        base = "Alpha_symdir" if self.kind == "statefreq" and self.datatype == "standard" else kind.title
        return base + part_suffix(self.divisions, n_divisions)

    def type_name(self) -> str:
        if self.kind == "statefreq" and self.datatype == "standard":
            return "Symmetric diricihlet/beta distribution alpha_i parameter"   # sic, MrBayes' spelling
        return (CLOCK_KIND.get(self.kind) or KIND[self.kind]).type_name


def model_parameters(settings, params) -> list[ModelParameter]:
    """Every parameter MrBayes lists at `mcmc` start, in its order: by type, then by first division.
    The divisions sharing one are `mbgpu.parameters.link_groups`' (free or fixed alike)."""
    from mbgpu.tree_groups import tree_groups

    divs = settings.divisions
    free = {(p.kind, tuple(p.divisions)) for p in params}
    groups = tree_groups(settings)
    taus = [tuple(sorted(d for j in groups.sharing(t) for d in groups.groups[j])) for t in range(groups.n_topologies)]
    trees = {"topology": taus, "brlens": list(groups.groups)}
    out: list[ModelParameter] = []
    for k in PARAMS + TREE:
        tree = k in TREE
        for g in trees[k.kind] if tree else link_groups(settings, k.kind):
            d = divs[g[0] - 1]
            is_estimated = (k.kind, g) in free or (not tree and is_free(k.kind, d))
            out.append(ModelParameter(k.kind, g, d.prset[k.prset], is_estimated, d.datatype))
    return out + _clock_parameters(settings, trees["brlens"])


def _clock_parameters(settings, trees) -> list[ModelParameter]:
    """The clock parameters MrBayes lists after Tau and V: for each clock tree, its kinds in CLOCK's order."""
    from mbgpu.output.clock_summary import clock_kinds

    per_tree = [(g, clock_kinds(settings, g)) for g in trees]
    out = []
    for k in CLOCK:
        for g, kinds in per_tree:
            if k in kinds:
                d = settings.divisions[g[0] - 1]
                out.append(ModelParameter(k.kind, g, d.prset[k.prset] if k.prset else None, False, d.datatype))
    return out


def clock_pfile_header(settings, params, models) -> list[str]:
    """pfile_header of an analysis on one clock tree (`models`: mbgpu.clock.model.clock_models), as MrBayes
    3.2.7a writes it: `TH TL`, then `n_CPP` (cpp) and `prop_ancfossil` (fossilization), the substitution
    parameters, then the free clock parameters in MrBayes' order (param_kinds.CLOCK). Under fossil-sampling
    rate shifts MrBayes' header has one name too many: an empty one before relative_fossilization_1..s+1.

    Raises:
        NotImplementedYet: several trees with a clock among them (not measured against MrBayes yet).
    """
    from mbgpu.errors import NotImplementedYet

    if len(models) != 1 or models[0] is None:
        if any(m is not None for m in models):
            raise NotImplementedYet("a clock tree beside other trees (unlink topology/brlens) is not supported yet")
        return pfile_header(settings, params)
    m = models[0]
    sfx = part_suffix(m.divisions, len(settings.divisions))
    head = ["TH", "TL"] + ["n_CPP"] * (m.clock_var == "cpp") + ["prop_ancfossil"] * (m.tree_prior == "fossilization")
    return [c + sfx for c in head] + pfile_header(settings, params)[1:] + [
        c + sfx if c else c for c in clock_columns(m)]


def clock_columns(m) -> list[str]:
    """The labels of a ClockModel's free parameters after the substitution ones (no suffix)."""
    birth = m.tree_prior in ("birthdeath", "fossilization")
    free = {"net_speciation": birth and not m.speciation.fixed,
            "relative_extinction": birth and not m.extinction.fixed,
            "relative_fossilization": m.tree_prior == "fossilization" and not m.fossilization.fixed,
            "popsize": m.tree_prior == "coalescence" and not m.popsize.fixed,
            "cpprate": m.clock_var == "cpp" and not m.cpprate.fixed,
            "tk02var": m.clock_var == "tk02" and not m.tk02var.fixed,
            "igrvar": m.clock_var == "igr" and not m.igrvar.fixed,
            "clockrate": m.clock_rate.family != "Fixed"}
    out: list[str] = []
    for k in CLOCK:
        if not free.get(k.kind):
            continue
        if k.kind == "relative_fossilization" and m.shift_times:
            out += [""] + ["%s_%d" % (k.column, i) for i in range(1, len(m.shift_times) + 2)]
        else:
            out.append(k.column)
    return out
