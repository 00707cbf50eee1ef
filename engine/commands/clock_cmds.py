"""The clock settings of the MrBayes language: `calibrate`, prset's clock options (the lines MrBayes echoes
for them, `samplestrat=random s: t1 ... ts` fossil-sampling shift times) and the one refusal left, at
`mcmc`/`ss`, until the clock sampler lands (docs/plans/clocks-integration.md).
"""
from __future__ import annotations

import dataclasses

from mbgpu.clock.distributions import age_distribution, calibration_message, clock_rate_distribution
from mbgpu.clock.model import Calibration, clock_models, clock_setting
from mbgpu.commands.params import parse_number, resolve
from mbgpu.commands.values import parse_assignments
from mbgpu.errors import CommandError, ModelError, NotImplementedYet

_F2 = "%1.2f"


def _args(prior, fmt: str = _F2) -> str:
    return ",".join(fmt % float(a) for a in prior.args)


def _plain(prior) -> str:
    """`Exponential(10.00)`: MrBayes' echo of most clock priors (%1.2lf)."""
    return "%s(%s)" % (prior.kind, _args(prior))


def _popsize(prior) -> str:
    if prior.kind == "Fixed":
        return "Fixed(%s)" % _args(prior, "%1.5f")
    return "%s(%s)" % ("Truncated Normal" if prior.kind == "Normal" else prior.kind, _args(prior))


def _brlens(prior) -> str | None:
    return "Clock:%s" % prior.sub.kind if prior.kind == "Clock" else None


# prset option -> its echo text (None: MrBayes prints nothing); mbgpu echoes the clock options only
_ECHO = {
    "Brlenspr": _brlens,
    "Treeagepr": lambda v: age_distribution(v.kind, v.args).text(),
    "Clockratepr": lambda v: clock_rate_distribution(v.kind, v.args).text(),
    "Speciationpr": _plain, "Extinctionpr": _plain, "Fossilizationpr": _plain, "Igrvarpr": _plain,
    "TK02varpr": _plain, "Cppmultdevpr": _plain, "Cppratepr": _plain, "Popsizepr": _popsize,
    "Sampleprob": lambda v: "%1.8f" % v, "Nodeagepr": str, "Clockvarpr": str,
}


def echo_lines(name: str, value, shifts: tuple | None) -> list[str]:
    """The lines MrBayes 3.2.7a prints for `prset name=value` of a clock option (its `Setting ... to ...`,
    spacer included), [] for other options."""
    if name == "Samplestrat":
        return ["   Setting SampleStrat to %s" % value] + [
            "   Setting %d fossil sampling rate shift time to %1.2f" % (i, t) for i, t in enumerate(shifts or (), 1)]
    text = _ECHO[name](value) if name in _ECHO else None
    return [] if text is None else ["   Setting %s to %s" % (name, text)]


def echo(name: str, value, shifts: tuple | None, divisions: list[int], n_divisions: int) -> list[str]:
    """echo_lines as MrBayes prints them for 0-based `divisions` of `n_divisions`: partitioned, each line
    once per division with ` for partition N` (treeagepr never; clockratepr only under a partial applyto)."""
    lines = echo_lines(name, value, shifts)
    if n_divisions == 1:
        return lines
    marked = name != "Treeagepr" and (name != "Clockratepr" or len(divisions) != n_divisions)
    return [line + (" for partition %d" % (i + 1) if marked else "") for line in lines for i in divisions]


def fold_shift_times(cmd, names: list[str]):
    """prset's `samplestrat=WORD s: t1 ... ts` (MrBayes' fossil-sampling rate shifts): the command without
    the `s: t1 ... ts` tokens, and {id(samplestrat's name token): (t1, ..., ts)}. MrBayes takes shift times
    after random and diversity only (after the others `s` is an unknown parameter), each > 0 and decreasing.
    """
    toks, out, shifts, i = cmd.tokens, [], {}, 0
    while i < len(toks):
        tok = toks[i]
        out.append(tok)
        i += 1
        if not (tok.kind == "word" and i + 1 < len(toks) and toks[i].is_punct("=") and _is_samplestrat(tok, names)):
            continue
        out += toks[i:i + 2]
        word, i = toks[i + 1], i + 2
        if i + 1 < len(toks) and toks[i].text.isdigit() and toks[i + 1].is_punct(":"):
            if _strategy(word.text) not in ("Random", "Diversity"):
                raise cmd.error("unknown parameter of prset '%s' (fossil-sampling shift times follow "
                                "samplestrat=random or diversity only)" % toks[i].text, toks[i], CommandError)
            shifts[id(tok)], i = _shift_times(cmd, toks, i), i + 2 + int(toks[i].text)
    return dataclasses.replace(cmd, tokens=out), shifts


def _is_samplestrat(tok, names: list[str]) -> bool:
    try:
        return resolve(tok.text, names, "parameter of prset") == "Samplestrat"
    except CommandError:
        return False


def _strategy(word: str) -> str | None:
    try:
        return resolve(word, ("Random", "Diversity", "Cluster", "FossilTip"), "value for Samplestrat")
    except CommandError:
        return None


def _shift_times(cmd, toks, i: int) -> tuple[float, ...]:
    """The s times after `s:` at toks[i], with MrBayes' checks and words."""
    count, times = int(toks[i].text), []
    for j in range(i + 2, i + 2 + count):
        if j >= len(toks) or toks[j].kind != "word":
            raise cmd.error("Expecting <number>", toks[min(j, len(toks) - 1)], CommandError)
        t = parse_number(toks[j].text, "Samplestrat")
        if t <= 0:
            raise cmd.error("Time of fossil sampling rate shift must be > 0.", toks[j], CommandError)
        if times and t >= times[-1]:
            raise cmd.error("Time of fossil sampling rate shift must be in decreasing order", toks[j], CommandError)
        times.append(t)
    return tuple(times)


_CAL_FAMILIES = ("Unconstrained", "Fixed", "Uniform", "Offsetexponential", "Truncatednormal", "Lognormal",
                 "Offsetlognormal", "Gamma", "Offsetgamma")
_CAL_COUNTS = {"Fixed": 1, "Uniform": 2, "Offsetexponential": 2, "Truncatednormal": 3, "Lognormal": 2,
               "Offsetlognormal": 3, "Gamma": 2, "Offsetgamma": 3}


def _calibration_problem(family: str, p: tuple) -> str | None:
    """MrBayes' DoCalibrateParm checks, first problem first, in its words (one line)."""
    first = {"Lognormal": (p[0] < 0, "Mean age must be nonnegative"),
             "Gamma": (p[0] <= 0, "Mean parameter must be positive"),
             "Fixed": (p[0] < 0, "Fixed age must be nonnegative"),
             "Uniform": (p[0] < 0, "Minimum age must be nonnegative"),
             "Truncatednormal": (p[0] < 0, "Offset (minimum or truncation) age must be nonnegative.")}
    bad, text = first.get(family, (p[0] < 0, "Offset age must be nonnegative"))
    if bad:
        return text
    if len(p) > 1:
        second = {"Uniform": (p[1] <= p[0], "Maximum age of uniform distribution must be larger than minimum age"),
                  "Offsetexponential": (p[1] <= p[0], "Mean age must be larger than offset age."),
                  "Truncatednormal": (p[1] <= p[0], "Mean age must be larger than offset (truncation) age."),
                  "Lognormal": (p[1] <= 0, "Standard deviation must be positive."),
                  "Offsetlognormal": (p[1] <= p[0], "Mean age must be larger than offset age."),
                  "Gamma": (p[1] <= 0, "Standard deviation must be positive."),
                  "Offsetgamma": (p[1] <= 0, "Mean age must be positive.")}
        bad, text = second[family]
        if bad:
            return text
    if len(p) > 2 and family in ("Offsetgamma", "Offsetlognormal") and p[2] <= 0:
        return "Standard deviation must be positive."
    return None


def _target(settings, name: str):
    """(is_taxon, taxa) of the hard constraint or taxon `name` (MrBayes looks at both, case-insensitively)."""
    hits = []
    c = settings.constraints.get(name.lower())
    if c is not None and c.kind == "hard":
        hits.append((False, frozenset(c.taxa), c.name))
    taxa = [t.lower() for t in settings.matrix.taxa]
    if name.lower() in taxa:
        i = taxa.index(name.lower())
        hits.append((True, frozenset({i}), settings.matrix.taxa[i]))
    if not hits:
        raise CommandError("No taxon or hard constraint named %s found. Note that only hard constraint can be "
                           "calibrated." % name)
    if len(hits) > 1:
        raise CommandError("Both a taxon and a constraint named %s encountered -- please rename one" % name)
    return hits[0]


def do_calibrate(interp, spec, cmd) -> None:
    """`calibrate NAME=dist(...) ...`: the age prior of a hard constraint's node or of a tip, kept in
    `Settings.calibrations` (used where `prset nodeagepr=calibrated`), as MrBayes' DoCalibrateParm does;
    `NAME=unconstrained` forgets it."""
    s = interp.settings
    for a in parse_assignments(cmd.tokens[1:], cmd.src):
        if a.value is None:
            raise cmd.error("expected 'calibrate %s=dist(...)'" % a.name.text, a.name, CommandError)
        try:
            tip, taxa, name = _target(s, a.name.text)
        except CommandError as err:
            raise cmd.error(err.message, a.name, CommandError) from None
        try:
            family = resolve(a.value.head, _CAL_FAMILIES, "calibration prior")
        except CommandError as err:
            raise cmd.error(err.message, a.value.token, CommandError) from None
        if family == "Unconstrained":
            interp.console.print("   Resetting previous calibration for %s" % a.name.text)
            s.calibrations.pop(name.lower(), None)
            continue
        dist = _distribution(cmd, a, family)
        interp.console.print("   " + calibration_message(a.name.text, dist, taxon=tip))   # as typed (MrBayes)
        s.calibrations[name.lower()] = Calibration(name, tip, taxa, dist)


def _distribution(cmd, a, family: str):
    args = a.value.args or []
    if len(args) != _CAL_COUNTS[family]:
        raise cmd.error("%s takes %d numbers, got %d" % (family, _CAL_COUNTS[family], len(args)), a.value.token,
                        CommandError)
    try:
        params = tuple(parse_number(x, family) for x in args)
    except CommandError as err:
        raise cmd.error(err.message, a.value.token, CommandError) from None
    problem = _calibration_problem(family, params)
    if problem is not None:
        raise cmd.error(problem, a.value.token, CommandError)
    return age_distribution(family, params)


SAMPLED_TREE_PRIORS = ("uniform", "birthdeath", "coalescence", "fossilization")   # the clock tree priors `mcmc` runs
SAMPLED_CLOCKS = ("strict", "igr", "tk02", "cpp")


def refuse_clock(settings, command: str) -> None:
    """The refusal of what the clock sampler does not run yet: `mcmc` or `ss` on a clock tree other than one
    strict, igr, tk02 or cpp clock under the uniform, birth-death, coalescent or fossilized birth-death prior
    (samplestrat=cluster there is MrBayes' error, for `ss` too: measured); `ss` refuses a relaxed clock under
    FBD (checked with the strict clock only) and the compound Poisson clock; the fossilized birth-death prior
    with the compound Poisson clock is refused (its fossil moves do not carry CPP events).

    Raises:
        NotImplementedYet: such a clock setting.
        ModelError: clock:fossilization with samplestrat=cluster.
    """
    brlens = clock_setting(settings)
    if brlens is None:
        return
    models = clock_models(settings)
    if len(models) != 1:
        raise NotImplementedYet("%s with prset brlenspr=%s is not supported yet" % (command, brlens))
    model = models[0]
    if model.tree_prior not in SAMPLED_TREE_PRIORS:
        raise NotImplementedYet("%s with prset brlenspr=%s is not supported yet" % (command, brlens))
    if model.clock_var not in SAMPLED_CLOCKS:
        raise NotImplementedYet("%s with prset clockvarpr=%s is not supported yet" % (command, model.clock_var))
    if model.clock_var == "cpp" and (command != "mcmc" or model.tree_prior == "fossilization"):
        what = "prset brlenspr=%s and clockvarpr=cpp" % brlens if command == "mcmc" else "prset clockvarpr=cpp"
        raise NotImplementedYet("%s with %s is not supported yet" % (command, what))
    if model.tree_prior == "fossilization":
        if command != "mcmc" and model.clock_var != "strict" and model.sample_strat != "cluster":
            raise NotImplementedYet("%s with prset brlenspr=%s and clockvarpr=%s is not supported yet"
                                    % (command, brlens, model.clock_var))
        _refuse_fossilization(model)


def _refuse_fossilization(model) -> None:
    """MrBayes 3.2.7a stops at the first move under samplestrat=cluster (its words); strict, igr and tk02
    clocks run (the FBD moves carry igr / tk02 rates as MrBayes' do: mbgpu.clock.fbd_moves).

    Raises:
        ModelError: samplestrat=cluster.
    """
    if model.sample_strat == "cluster":
        raise ModelError("Sampling strategy Cluster for fossilized birth-death process not implemented")
