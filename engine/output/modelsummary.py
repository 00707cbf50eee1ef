"""The model summary MrBayes 3.2.7a prints at the start of `mcmc` and for `showmodel` (its ShowModel and
ShowParameters): each division's model, the "Active parameters" table and the parameter list.

Lines are laid out as MrBayes prints them at its prompt; inside an executed file MrBayes indents every
line three spaces more. Only the model features mbgpu runs are described; parameter names come from
`mbgpu.output.paramnames` like the `.p` header's.
"""
from __future__ import annotations

from mbgpu import constraints
from mbgpu.output.paramnames import ModelParameter, model_parameters
from mbgpu.output import clock_summary
from mbgpu.param_kinds import CLOCK, CLOCK_KIND, KIND, PARAMS, SCALAR, TREE

_IN = " " * 21      # MrBayes' indentation of a setting's explanation lines


def _f2(values) -> str:
    return ",".join("%.2f" % float(v) for v in values)


def _numbers(prior, n: int, default: float = 1.0) -> list[float]:
    """A prior's n numeric arguments (one argument stands for all n, as `dirichlet(1)` does)."""
    args = [a for a in prior.args if not isinstance(a, str)]
    if len(args) == n:
        return args
    return [args[0] if args else default] * n


def _fix_type(prior) -> str:
    """MrBayes' stateFreqsFixType of a fixed state-frequency prior: Equal, Empirical or User."""
    words = [a for a in prior.args if isinstance(a, str)]
    if words and "empirical".startswith(words[0].lower()):
        return "Empirical"
    return "Equal" if words or not prior.args else "User"


_FIXED_FREQS = {"Equal": "State frequencies are fixed to be equal",
                "User": "State frequencies have been fixed by the user",
                "Empirical": "State frequencies have been fixed to the empirical frequencies in the data"}


def _aamodel(d) -> str:
    """The fixed amino-acid model's name as MrBayes prints it (`LG`, else as in the command table)."""
    args = d.prset["Aamodelpr"].args
    name = str(args[0]) if args else "Poisson"
    return "LG" if name == "Lg" else name


def _substitution(d) -> list[str]:
    lset, prset = d.lset, d.prset
    if d.datatype == "protein":
        aa = _aamodel(d)
        rates = "be equal" if aa in ("Poisson", "Equalin") else "the %s rates" % aa
        return ["         Aamodel   = %s" % aa, _IN + "Substitution rates are fixed to %s" % rates]
    if d.datatype == "standard":
        return ["         Coding    = %s" % lset["Coding"]]
    out = ["         Nucmodel  = %s" % lset["Nucmodel"], "         Nst       = %s" % lset["Nst"]]
    if lset["Nst"] == "2":
        pr = prset["Tratiopr"]
        if pr.kind == "Beta":
            out += [_IN + "Transition and transversion  rates, expressed",
                    _IN + "as proportions of the rate sum, have a", _IN + "Beta(%s) prior" % _f2(_numbers(pr, 2))]
        else:
            out.append(_IN + "Transition/transversion rate ratio is fixed to %.2f." % _numbers(pr, 1)[0])
    elif lset["Nst"] in ("6", "Mixed"):
        pr = prset["Revmatpr"]
        if pr.kind == "Dirichlet":
            out += [_IN + "Substitution rates, expressed as proportions",
                    _IN + "of the rate sum, have a Dirichlet prior", _IN + "(%s)" % _f2(_numbers(pr, 6))]
        else:
            out += [_IN + "Substitution rates are fixed to be ", _IN + "(%s)." % _f2(_numbers(pr, 6))]
    return out


def _frequencies(d) -> list[str]:
    if d.datatype == "standard":
        return ["         # States  = Variable, up to 10", _IN + "State frequencies are fixed to be equal"]
    n = 20 if d.datatype == "protein" else 4
    out = ["         # States  = %d" % n]
    pr = d.prset["Statefreqpr"]
    if d.datatype == "protein" and _aamodel(d) != "Equalin":
        aa = _aamodel(d)
        return out + [_IN + ("State frequencies are fixed to be equal" if aa == "Poisson" else
                             "State frequencies are fixed to the %s frequencies" % aa)]
    if pr.kind != "Dirichlet":
        return out + [_IN + _FIXED_FREQS[_fix_type(pr)]]
    alphas = ["%.2f" % a for a in _numbers(pr, n)]
    if n == 4:
        return out + [_IN + "State frequencies have a Dirichlet prior", _IN + "(%s)" % ",".join(alphas)]
    return out + [_IN + "State frequencies have a Dirichlet prior", _IN + "(%s," % ",".join(alphas[:10]),
                  _IN + "%s)" % ",".join(alphas[10:])]


def _rates(d) -> list[str]:
    lset, prset = d.lset, d.prset
    out = ["         Rates     = %s" % lset["Rates"]]
    if lset["Rates"] in ("Gamma", "Invgamma"):
        out.append(_IN + "The distribution is approximated using %d categories." % int(lset["Ngammacat"]))
        pr = prset["Shapepr"]
        if pr.kind == "Uniform":
            out += [_IN + "Shape parameter is uniformly distributed",
                    _IN + "on the interval (%s)." % _f2(_numbers(pr, 2))]
        elif pr.kind == "Exponential":
            out += [_IN + "Shape parameter is exponentially",
                    _IN + "distributed with parameter (%.2f)." % _numbers(pr, 1)[0]]
        else:
            out.append(_IN + "Shape parameter is fixed to %.2f." % _numbers(pr, 1)[0])
    if lset["Rates"] in ("Propinv", "Invgamma"):
        pr = prset["Pinvarpr"]
        if pr.kind == "Uniform":
            out += [_IN + "Proportion of invariable sites is uniformly dist-",
                    _IN + "ributed on the interval (%s)." % _f2(_numbers(pr, 2))]
        else:
            out.append(_IN + "Proportion of invariable sites is fixed to %.2f." % _numbers(pr, 1)[0])
    return out


def division_lines(d, number: int, n_divisions: int) -> list[str]:
    """ShowModel's block of one division."""
    head = "      Settings for partition %d --" % number if n_divisions > 1 else "      Data not partitioned --"
    names = {"dna": "DNA", "rna": "RNA", "protein": "Protein", "standard": "Standard"}
    lines = [head, "         Datatype  = %s" % names.get(d.datatype, d.datatype.capitalize())] + _substitution(d)
    if d.datatype != "standard":
        lines.append("         Covarion  = %s" % d.lset["Covarion"])
    return lines + _frequencies(d) + _rates(d)


def _prior(p: ModelParameter, index: int, settings) -> str:
    """The `Prior = ...` text of parameter number `index` (0-based)."""
    pr, k = p.prior, p.kind
    if k == "topology":
        if pr.kind == "Fixed":
            return "Prior is fixed to the topology of user tree '%s'" % pr.args[0]
        if pr.kind == "Constraints":
            return "Prior on topology obeys the following constraints:"
        return "All topologies equally probable a priori"
    if k == "brlens":
        return _brlens_prior(pr)
    if k == "tratio":
        if pr.kind != "Beta":
            return "Fixed(%.2f)" % _numbers(pr, 1)[0]
        # MrBayes takes the second Beta value from the division numbered like the parameter (sic)
        other = settings.divisions[index].prset["Tratiopr"] if index < len(settings.divisions) else pr
        return "Beta(%.2f,%.2f)" % (_numbers(pr, 2)[0], _numbers(other, 2)[1] if other.kind == "Beta" else 0.0)
    if k == "revmat":
        return "%s(%s)" % ("Dirichlet" if pr.kind == "Dirichlet" else "Fixed", _f2(_numbers(pr, 6)))
    if k == "statefreq":
        return _statefreq_prior(p, settings)
    if KIND[k].form == SCALAR:
        n = {"Uniform": 2, "Exponential": 1}.get(pr.kind, 1)
        return "%s(%s)" % (pr.kind if pr.kind in ("Uniform", "Exponential") else "Fixed", _f2(_numbers(pr, n)))
    if pr.kind == "Fixed":      # the rate multipliers
        return "Fixed(1.0)"
    return "Dirichlet(%s)" % _f2(_numbers(settings.divisions[i - 1].prset["Ratepr"], 1)[0] for i in p.divisions)


def _statefreq_prior(p: ModelParameter, settings) -> str:
    d = settings.divisions[p.divisions[0] - 1]
    if p.datatype == "standard":
        return "Symmetric dirichlet with all parameters equal to infinity"
    if p.datatype == "protein":
        aa = _aamodel(d)
        if aa == "Equalin":
            fixed = {"Equal": "equal frequencies", "User": "user-specified", "Empirical": "empirical frequencies"}
            return "Dirichlet" if p.prior.kind == "Dirichlet" else "Fixed (%s)" % fixed[_fix_type(p.prior)]
        return "Fixed (equal frequencies)" if aa == "Poisson" else "Fixed (%s frequencies)" % aa
    return "Dirichlet" if p.prior.kind == "Dirichlet" else "Fixed"


def _brlens_prior(pr) -> str:
    sub = pr.sub
    if pr.kind != "Unconstrained" or sub is None:
        return str(pr)
    fmt = {"Uniform": "(%.1f,%.1f)", "Exponential": "(%.1f)", "twoExp": "(%.1f,%.1f)"}.get(
        sub.kind, "(%.1f,%.4f,%.1f,%.1f)")    # GammaDir, invGamDir
    return "Unconstrained:%s%s" % (sub.kind, fmt % tuple(float(a) for a in sub.args))


def _partitions(divisions: tuple[int, ...], n: int) -> str:
    if len(divisions) == 1:
        return "Partition  = %d" % divisions[0]
    if len(divisions) == 2:
        return "Partitions = %d and %d" % divisions
    if len(divisions) == n:
        return "Partitions = All"
    return "Partitions = %s, and %d" % (", ".join(map(str, divisions[:-1])), divisions[-1])


def parameter_lines(settings, params) -> list[str]:
    """ShowParameters: the "Active parameters" table and one paragraph per parameter."""
    n = len(settings.divisions)
    mps = model_parameters(settings, params)
    number = {(p.kind, p.divisions): i for i, p in enumerate(mps, 1)}
    out = ["   Active parameters: ", ""]
    rule = "      " + "-" * (18 + 3 * n if n > 1 else 21)
    if n > 1:
        out += [" " * 26 + "Partition(s)", "      Parameters        " + "".join(" %2d" % (i + 1) for i in range(n))]
    else:
        out.append("      Parameters")
    out.append(rule)
    for k in PARAMS + TREE + CLOCK:
        cells = ["  ." for _ in range(n)]
        for p in mps:
            if p.kind == k.kind:
                for i in p.divisions:
                    cells[i - 1] = " %2d" % number[(p.kind, p.divisions)]
        if any(c != "  ." for c in cells):
            out.append("      %-18s%s" % (k.name, "".join(cells)))
    out += [rule, ""]
    if n > 1:
        out += ["      Parameters can be linked or unlinked across partitions using 'link' and 'unlink'", ""]
    for i, p in enumerate(mps):
        out += ["   %4d --  Parameter  = %s" % (i + 1, p.name(n)), "            Type       = %s" % p.type_name()]
        if p.kind in CLOCK_KIND:
            first, *more = clock_summary.prior_lines(p.kind, p.prior, settings, p.divisions)
            out += ["            Prior      = %s" % first] + more
        else:
            out.append("            Prior      = %s" % _prior(p, i, settings))
        if p.kind == "topology" and p.prior.kind == "Constraints":
            out += ["                         " + c.describe() for c in constraints.named(settings, p.prior.args)]
        if p.kind == "brlens" and p.prior.kind == "Clock":
            out += clock_summary.brlens_lines(settings, p.divisions)
        if n > 1:
            out.append("            " + _partitions(p.divisions, n))
        sub = clock_summary.subparam(p.kind, settings, p.divisions)
        if sub is not None:
            out.append("            Subparam.  = %s" % sub)
        if p.kind == "topology":
            subs = [q.name(n) for q in mps if q.kind == "brlens" and set(q.divisions) <= set(p.divisions)]
            if len(subs) == 1:
                out.append("            Subparam.  = %s" % subs[0])
            else:           # one Tau with several V (`unlink brlens`): MrBayes' list
                out.append("            Subparams  = %s and %s" % (", ".join(subs[:-1]), subs[-1]))
        out.append("")
    return out


def model_summary_lines(settings, params=None) -> list[str]:
    """The whole summary, ending with the blank line after the last parameter."""
    if params is None:
        from mbgpu.parameters import free_parameters

        params = free_parameters(settings)
    n = len(settings.divisions)
    out = ["   Model settings:", ""]
    for i, d in enumerate(settings.divisions, 1):
        out += division_lines(d, i, n) + ([""] if i != n else [])
    return out + [""] + parameter_lines(settings, params)


def move_lines(moves) -> list[str]:
    """MrBayes' list of moves with the probability that a generation uses each (its weight's share)."""
    total = sum(m.weight for m in moves)
    rows = ["       %6.2f %%   %s" % (100.0 * m.weight / total, m.name) for m in moves]
    return ["   The MCMC sampler will use the following moves:", "      With prob.  Chain will use move"] + rows
