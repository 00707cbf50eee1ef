"""What each command of the MrBayes language does to the session's Settings.

`run(interp, spec, cmd)` is the single entry; parameter names and values are resolved through the
command table, and every error is located at the token that caused it.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from mbgpu import charsets as cs
from mbgpu import constraints
from mbgpu.commands import helptext
from mbgpu.commands.params import PriorValue, resolve
from mbgpu.commands.char_cmds import do_charstat, do_ctype, take_ctypes
from mbgpu.commands.clock_cmds import do_calibrate, echo, fold_shift_times, refuse_clock
from mbgpu.commands.propset_cmd import do_propset, forget_after, forget_on_resize
from mbgpu.commands.showmatrix import do_showmatrix
from mbgpu.commands.taxa_cmds import do_constraint, do_delete, do_taxastat, do_taxset
from mbgpu.commands.values import Assignment, parse_assignments
from mbgpu.analysis import adopt_run_count, run_mcmc
from mbgpu.deleted_taxa import analysis_settings
from mbgpu.errors import CommandError, MbgpuError, NotImplementedYet, Quit
from mbgpu.output import report_formats
from mbgpu.parameters import link_groups
from mbgpu.start_state import user_tree
from mbgpu.sampler import stepping_stone
from mbgpu.settings import SS_ONLY
from mbgpu.summary import run_sump, run_sumt
from mbgpu.summary.sumss import run_sumss


def _located(cmd, tok, err: MbgpuError) -> MbgpuError:
    if err.where is None:
        err.where = cmd.src.where(tok.pos)
    return err


def assignments(spec, cmd) -> list[tuple[str, Any, Assignment]]:
    """(canonical name, converted value, assignment) for every `name=value` of the command."""
    out = []
    names = spec.param_names()
    by_name = {p.name: p for p in spec.params}
    for a in parse_assignments(cmd.tokens[1:], cmd.src):
        try:
            name = resolve(a.name.text, names, "parameter of %s" % spec.name.lower())
        except CommandError as err:
            raise _located(cmd, a.name, err) from None
        param = by_name[name]
        tok = a.value.token if a.value is not None else a.name
        try:
            value = param.convert(a.value)
        except CommandError as err:
            raise _located(cmd, tok, err) from None
        shown = param.unsupported(value)
        if shown is not None:
            raise _located(cmd, tok, NotImplementedYet("%s %s=%s is not supported yet"
                                                       % (spec.name.lower(), name.lower(), shown)))
        try:
            param.check(value)
        except CommandError as err:
            raise _located(cmd, tok, err) from None
        out.append((name, value, a))
    return out


def _need_data(interp, cmd) -> None:
    if interp.settings.matrix is None:
        raise cmd.error("%s needs a data matrix: execute a file with a data block first" % cmd.tokens[0].text,
                        cmd.tokens[0], CommandError)


def do_set(interp, spec, cmd) -> None:
    s = interp.settings
    got = assignments(spec, cmd)
    forget_after(s, "Set", [name for name, _, _ in got])
    for name, value, a in got:
        if name == "Partition":
            _need_data(interp, cmd)
            try:
                part = resolve(value, list(s.partitions), "partition")
            except CommandError as err:
                raise _located(cmd, a.value.token, err) from None
            s.activate(part)
            take_ctypes(interp, cmd)
            interp.console.print("   Setting %s as the partition, dividing characters into %d parts"
                                 % (part, len(s.divisions)))
        s.options[name] = value


def _model(interp, spec, cmd, attr: str) -> None:
    _need_data(interp, cmd)
    s = interp.settings
    shifts: dict = {}
    if attr == "prset":
        cmd, shifts = fold_shift_times(cmd, spec.param_names())
    pairs = assignments(spec, cmd)
    applyto = "all"
    for name, value, a in pairs:
        if name == "Applyto":
            applyto = value
            bad = [i for i in (value if value != "all" else ()) if i > len(s.divisions)]
            if bad:
                raise cmd.error("applyto=(%d): there are only %d divisions" % (bad[0], len(s.divisions)),
                                a.value.token, CommandError)
    divisions = s.division_indices(applyto)
    for name, value, a in pairs:
        if name == "Topologypr" and value.kind == "Fixed" and value.args[0] not in s.trees:
            raise cmd.error("topologypr=fixed(%s): no tree of that name (trees: %s)"
                            % (value.args[0], ", ".join(s.trees) or "none"), a.value.token, CommandError)
        if name == "Topologypr" and value.kind == "Constraints":
            _check_constraints(interp, cmd, a, value.args)
        if name == "Ratepr" and value.kind == "Dirichlet" and len(value.args) != len(divisions):
            raise cmd.error("ratepr=dirichlet(...) needs one value per division it applies to (%d), got %d"
                            % (len(divisions), len(value.args)), a.value.token, CommandError)
    for j, i in enumerate(divisions):
        target = getattr(s.divisions[i], attr)
        for name, value, a in pairs:
            if name == "Ratepr" and value.kind == "Dirichlet":   # MrBayes: the j-th value to the j-th division
                value = PriorValue("Dirichlet", (value.args[j],))
            if name == "Samplestrat":         # MrBayes forgets earlier shift times at every samplestrat
                target["Fossilshifts"] = shifts.get(id(a.name), ())
            if name != "Applyto":
                target[name] = value
    if attr == "prset":
        for name, value, a in pairs:
            for line in echo(name, value, shifts.get(id(a.name)), divisions, len(s.divisions)):
                interp.console.print(line)
    s.reset_start_values()


def _check_constraints(interp, cmd, a, names) -> None:
    """topologypr=constraints(...): every name defined, the hard ones compatible (MrBayes refuses the
    prset otherwise); trivial ones are disregarded with MrBayes' warning (deleted taxa left out)."""
    s = analysis_settings(interp.settings, for_run=False)
    try:
        chosen = constraints.named(s, names)
        n = s.matrix.ntax
        constraints.ConstraintSet([c for c in chosen if constraints.trivial(c, n) is None], n)
    except MbgpuError as err:
        raise cmd.error(err.message, a.value.token, type(err)) from None
    for c in chosen:
        why = constraints.trivial(c, s.matrix.ntax)
        if why:
            interp.console.print("   WARNING: Constraint '%s' will be disregarded: %s" % (c.name, why))


def do_mcmc(interp, spec, cmd, run: bool = True) -> None:
    s = interp.settings
    got = assignments(spec, cmd)
    if got and not run:
        _need_data(interp, cmd)      # MrBayes' mcmcp and ssp set nothing before a matrix exists
    for name, value, _ in got:
        forget_on_resize(s, name, value)
        s.mcmc[name] = value
        if name in ("Nruns", "Nchains") and s.startvals_grid is not None:
            # MrBayes keeps start values in a runs x chains grid that each setting resizes: chains it
            # drops lose them, chains added later start from random trees
            runs, chains = s.startvals_grid
            s.startvals_grid = (min(runs, value), chains) if name == "Nruns" else (runs, min(chains, value))
    if not run:
        adopt_run_count(interp.settings)   # MrBayes' DoMcmcp hands nruns to sump and sumt too
    else:
        _need_data(interp, cmd)
        try:
            refuse_clock(s, "mcmc")
            run_mcmc(interp)
        except MbgpuError as err:
            raise _located(cmd, cmd.tokens[0], err) from None


def do_ss(interp, spec, cmd, run: bool = True) -> None:
    """ss/ssp: mcmc's parameters go to mcmc's settings (shared, as in MrBayes), the others to ss'; ss runs
    stepping-stone sampling (mbgpu.sampler.stepping_stone)."""
    got = assignments(spec, cmd)
    if got and not run:
        _need_data(interp, cmd)
    for name, value, a in got:
        if name == "Alpha" and value <= 0:
            raise _located(cmd, a.value.token, CommandError("alpha=%s: it must be greater than 0" % a.value.token.text))
        forget_on_resize(interp.settings, name, value)
        (interp.settings.ss if name in SS_ONLY else interp.settings.mcmc)[name] = value
    if not run:
        adopt_run_count(interp.settings)
        return
    _need_data(interp, cmd)
    try:
        refuse_clock(interp.settings, "ss")
        run_mcmc(interp, ss=stepping_stone.plan(interp.settings.mcmc, interp.settings.ss))
    except MbgpuError as err:
        raise _located(cmd, cmd.tokens[0], err) from None


def do_sumss(interp, spec, cmd) -> None:
    for name, value, _ in assignments(spec, cmd):
        interp.settings.sumss[name] = value
        if name == "Filename":
            interp.settings.sump[name] = value      # shared with sump, as in MrBayes
        if name in ("Relburnin", "Burnin", "Burninfrac"):
            interp.settings.mcmc[name] = value      # MrBayes' burn-in is one setting of mcmc, sump and sumss
    try:
        run_sumss(interp.settings, interp.console)
    except MbgpuError as err:
        raise _located(cmd, cmd.tokens[0], err) from None


def do_summary(interp, spec, cmd) -> None:
    store = getattr(interp.settings, spec.name.lower())
    for name, value, _ in assignments(spec, cmd):
        store[name] = value
    try:
        (run_sump if spec.name == "Sump" else run_sumt)(interp.settings, interp.console)
    except MbgpuError as err:
        raise _located(cmd, cmd.tokens[0], err) from None


def _name_eq_rest(cmd, what: str):
    toks = cmd.tokens
    if len(toks) < 3 or toks[1].kind == "punct" or not toks[2].is_punct("="):
        raise cmd.error("expected '%s NAME = ...;'" % what, toks[0], CommandError)
    return toks[1], toks[3:]


def do_charset(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    name, rest = _name_eq_rest(cmd, "charset")
    if not rest:
        raise cmd.error("charset %s is empty" % name.text, name, CommandError)
    s = interp.settings
    try:
        cols = cs.expand(cs.normalise([t.text for t in rest]), s.matrix.nchar, s.charsets)
    except CommandError as err:
        raise _located(cmd, rest[0], err) from None
    s.charsets[name.text] = cols


def do_partition(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    name, rest = _name_eq_rest(cmd, "partition")
    s = interp.settings
    if len(rest) < 3 or not rest[0].text.isdigit() or not rest[1].is_punct(":"):
        raise cmd.error("expected 'partition %s = N: set1, set2, ...;'" % name.text, name, CommandError)
    groups: list[list] = [[]]
    for tok in rest[2:]:
        if tok.is_punct(","):
            groups.append([])
        else:
            groups[-1].append(tok)
    n = int(rest[0].text)
    if len(groups) != n or any(not g for g in groups):
        raise cmd.error("partition %s declares %d parts but lists %d" % (name.text, n, len(groups)),
                        rest[0], CommandError)
    divisions = []
    for g in groups:
        try:
            divisions.append(cs.expand(cs.normalise([t.text for t in g]), s.matrix.nchar, s.charsets))
        except CommandError as err:
            raise _located(cmd, g[0], err) from None
    _check_partition(cmd, name, divisions, s.matrix)
    s.partitions[name.text] = divisions


def _check_partition(cmd, name, divisions, matrix) -> None:
    seen: dict[int, int] = {}
    for i, cols in enumerate(divisions):
        kinds = {matrix.datatypes[j] for j in cols}
        if len(kinds) > 1:
            raise cmd.error("part %d of partition %s mixes datatypes (%s)" % (i + 1, name.text,
                            ", ".join(sorted(kinds))), name, CommandError)
        for j in cols:
            if j in seen:
                raise cmd.error("character %d is in parts %d and %d of partition %s"
                                % (j + 1, seen[j] + 1, i + 1, name.text), name, CommandError)
            seen[j] = i
    if len(seen) != matrix.nchar:
        missing = min(set(range(matrix.nchar)) - set(seen))
        raise cmd.error("partition %s leaves character %d out of every part" % (name.text, missing + 1),
                        name, CommandError)


def do_link(interp, spec, cmd) -> None:
    """`link`/`unlink` as MrBayes' DoLink/DoUnlink: the listed divisions of each parameter get one new
    common link group (link) or a new group each (unlink); a parameter named twice keeps its last list."""
    _need_data(interp, cmd)
    s = interp.settings
    n = len(s.divisions)
    lists = {}
    for name, value, a in assignments(spec, cmd):
        numbers = tuple(range(1, n + 1)) if value == "all" else value
        if numbers and max(numbers) > n:
            raise cmd.error("%s %s=(%s): there %s only %d division%s" % (
                spec.name.lower(), name.lower(), ",".join(map(str, numbers)), "is" if n == 1 else "are", n,
                "" if n == 1 else "s"), a.value.token, CommandError)
        lists[name] = numbers
    for name, numbers in lists.items():
        (s.unlink if spec.name == "Unlink" else s.link)(name, numbers)
    s.reset_start_values()


def do_outgroup(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    if len(cmd.tokens) != 2:
        raise cmd.error("expected 'outgroup NAME;' or 'outgroup NUMBER;'", cmd.tokens[0], CommandError)
    tok, taxa = cmd.tokens[1], interp.settings.matrix.taxa
    if tok.text in taxa:
        interp.settings.outgroup = taxa.index(tok.text)
    elif tok.text.isdigit() and 1 <= int(tok.text) <= len(taxa):
        interp.settings.outgroup = int(tok.text) - 1
    else:
        raise cmd.error("outgroup: no taxon '%s'" % tok.text, tok, CommandError)
    interp.console.print("   Setting outgroup to taxon \"%s\"" % taxa[interp.settings.outgroup])


def _fold_suffixes(cmd):
    """startvals names with MrBayes' parameter suffix (`tau{1}=`, `v{1,3}=`): the command with each such
    name as one word token (`tau`), and {id(that token): '{1}'}."""
    tokens, suffixes, i = [], {}, 0
    toks = cmd.tokens
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "word" and i + 1 < len(toks) and toks[i + 1].is_punct("{") \
                and toks[i + 1].pos == tok.pos + len(tok.text):
            end = next((j for j in range(i + 2, len(toks)) if toks[j].is_punct("}")), None)
            if end is None:
                raise cmd.error("expected '}' after '%s{'" % tok.text, toks[i + 1], CommandError)
            suffixes[id(tok)] = "{%s}" % "".join(t.text for t in toks[i + 2:end]).lower()
            tokens.append(tok)
            i = end + 1
            continue
        tokens.append(tok)
        i += 1
    return dataclasses.replace(cmd, tokens=tokens), suffixes


def _startvals_key(s, cmd, name: str, suffix: str | None, tok) -> str:
    """Where a tau/V start tree is kept: `Tau` with one tree, `Tau{1}` (the tree's MrBayes suffix) with
    several (`unlink topology`); MrBayes' errors for a name that matches several trees or none."""
    from mbgpu.tree_groups import tree_groups

    try:
        groups = tree_groups(s)
    except NotImplementedYet as err:
        raise _located(cmd, tok, err) from None
    known = [groups.suffix(k) for k in range(len(groups))] if name == "V" else \
        list(dict.fromkeys(groups.tau_suffix(k) for k in range(len(groups))))   # one Tau may hold several V
    if suffix is None and len(known) > 1:
        raise cmd.error("Several parameters matched the abbreviated name '%s' (%s)" % (
            tok.text, ", ".join(name + k for k in known)), tok, CommandError)
    if suffix is not None and suffix not in known:
        raise cmd.error("Could not find parameter '%s%s' (the model has %s)" % (
            tok.text, suffix, ", ".join(name + k for k in known)), tok, CommandError)
    return name + suffix if len(known) > 1 else name


def _tau_key(s, v_key: str) -> str:
    """Where the start topology of startvals `v_key` (V, V{1}) is kept: its Tau's key (`Tau{1}`, or `Tau`
    where one Tau holds every tree: `unlink brlens` alone)."""
    from mbgpu.tree_groups import tree_groups

    groups = tree_groups(s)
    if len(groups) == 1:
        return "Tau"
    k = next(k for k in range(len(groups)) if "V" + groups.suffix(k) == v_key)
    return "Tau" + groups.tau_suffix(k) if groups.n_topologies > 1 else "Tau"


def _tau_divisions(s, tau_key: str):
    """The 0-based divisions of the Tau kept at `tau_key` (`Tau`: all; `Tau{1}`: that tree's Tau), whose
    topology prior (constraints, fixed) its start tree must respect."""
    from mbgpu.tree_groups import tree_groups

    if tau_key == "Tau":
        return None
    groups = tree_groups(s)
    return next(groups.tau_divisions(k) for k in range(len(groups)) if "Tau" + groups.tau_suffix(k) == tau_key)


def _check_lengths_topology(s, cmd, key: str, value: str, a) -> None:
    """MrBayes takes V's branch lengths onto the current start topology (tau's tree, or the fixed one;
    a random tree otherwise): a tree of another topology is its error."""
    tau_key = _tau_key(s, key)
    tau = s.startvals.get(tau_key) or s.fixed_topology(_tau_divisions(s, tau_key))
    if tau is None or user_tree(s, tau).splits() != user_tree(s, value).splits():
        raise cmd.error("Topology of user tree '%s' wrong in setting parameter '%s' (set %s first, to a tree "
                        "of the same topology)" % (value, key, "tau" + key[1:]), a.value.token, CommandError)


def _check_tau_prior(s, cmd, key: str, value: str, a) -> None:
    """MrBayes' errors for a start topology its Tau's prior forbids: one that breaks a constraint ("Tree
    breaks constraint '...'"), any for a fixed topology ("The parameter 'Tau{2}' is fixed ...")."""
    divisions = _tau_divisions(s, key)
    view = analysis_settings(s, trees={value}, for_run=False)          # deleted taxa out
    cset = constraints.active(view, divisions)
    broken = cset.violated(user_tree(view, value)) if cset is not None else None
    if broken is not None:
        raise cmd.error("startvals %s=%s: the tree breaks constraint '%s'" % (key.lower(), value, broken.name),
                        a.value.token, CommandError)
    fixed = s.fixed_topology(divisions)
    if fixed is not None:
        raise cmd.error("startvals %s=%s: the topology is fixed (prset topologypr=fixed(%s)), so its "
                        "starting value cannot be set" % (key.lower(), value, fixed), a.value.token, CommandError)


def do_startvals(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    s = interp.settings
    cmd, suffixes = _fold_suffixes(cmd)
    for name, value, a in assignments(spec, cmd):
        suffix = suffixes.get(id(a.name))
        if suffix is not None and name not in ("Tau", "V"):
            raise cmd.error("startvals %s%s: a suffix is not supported yet for %s"
                            % (name.lower(), suffix, name.lower()), a.name, NotImplementedYet)
        if name in ("Tau", "V") and value not in s.trees:
            raise cmd.error("startvals %s=%s: no tree of that name (trees: %s)"
                            % (name.lower(), value, ", ".join(s.trees) or "none"), a.value.token, CommandError)
        tree = name in ("Tau", "V")
        key = _startvals_key(s, cmd, name, suffix, a.name) if tree else name
        if name == "Tau":
            _check_tau_prior(s, cmd, key, value, a)
        if name == "Ratemultiplier" and len(link_groups(s, "ratemult")) > 1:    # MrBayes' words
            raise cmd.error("Several parameters matched the abbreviated name 'ratemultiplier' (%s)"
                            % ", ".join("Ratemultiplier{%s}" % ",".join(map(str, g))
                                        for g in link_groups(s, "ratemult")), a.name, CommandError)
        if name == "Ratemultiplier" and len(value) != len(s.divisions):
            raise cmd.error("ratemultiplier needs %d values (one per division), got %d"
                            % (len(s.divisions), len(value)), a.value.token, CommandError)
        if name == "Ratemultiplier" and not all(0.0 < v < float("inf") for v in value):
            raise cmd.error("ratemultiplier=(%s): every start rate multiplier must be a positive number "
                            "(outside the prior's support)" % ",".join("%g" % v for v in value),
                            a.value.token, CommandError)
        if name == "V":
            _check_lengths_topology(s, cmd, key, value, a)
        s.startvals[key] = value
        if tree:
            s.startvals_grid = (int(s.mcmc["Nruns"]), int(s.mcmc["Nchains"]))


def do_log(interp, spec, cmd) -> None:
    opts = {name: value for name, value, _ in assignments(spec, cmd)}
    if "Stop" in opts:
        interp.console.stop_log()
        return
    if "Start" not in opts:
        raise cmd.error("expected 'log start [filename=F] [append|replace];' or 'log stop;'", cmd.tokens[0],
                        CommandError)
    path = interp.resolve_path(opts.get("Filename", "log.out"))
    try:
        interp.console.start_log(path, "Append" in opts)
    except OSError as exc:
        raise cmd.error("cannot open log file '%s': %s" % (path, exc.strerror), cmd.tokens[0], CommandError)


def do_execute(interp, spec, cmd) -> None:
    if len(cmd.tokens) != 2:
        raise cmd.error("expected 'execute FILENAME;'", cmd.tokens[0], CommandError)
    path = interp.resolve_path(cmd.tokens[1].text)
    try:
        interp.run_file(path)
    except MbgpuError as err:
        raise _located(cmd, cmd.tokens[1], err) from None


def do_help(interp, spec, cmd) -> None:
    if len(cmd.tokens) == 1:
        interp.console.print(helptext.command_list(interp.table))
        return
    try:
        name = resolve(cmd.tokens[1].text, [s.name for s in interp.table.values()], "command")
    except CommandError as err:
        raise _located(cmd, cmd.tokens[1], err) from None
    interp.console.print(helptext.command_help(interp.table[name.lower()], interp.settings))


def do_showmodel(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    interp.console.print(helptext.model_summary(interp.settings))


def do_quit(interp, spec, cmd) -> None:
    raise Quit()


def do_exclude(interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    s = interp.settings
    words = [t.text for t in cmd.tokens[1:]]
    if not words:
        raise cmd.error("%s needs characters (ranges, charset names or all)" % spec.name.lower(),
                        cmd.tokens[0], CommandError)
    if [w.lower() for w in words] == ["all"]:
        cols = list(range(s.matrix.nchar))
    else:
        try:
            cols = cs.expand(cs.normalise(words), s.matrix.nchar, s.charsets)
        except CommandError as err:
            raise _located(cmd, cmd.tokens[1], err) from None
    if spec.name == "Exclude":
        s.excluded.update(cols)
    else:
        s.excluded.difference_update(cols)


def do_stored(interp, spec, cmd) -> None:
    """Definitions only options that are refused (constraints, clocks, doublets) would use: kept, inert."""
    interp.settings.stored.append((spec.name, " ".join(t.text for t in cmd.tokens[1:])))
    interp.console.print("   %s stored (used only by settings mbgpu does not support yet)" % spec.name.lower())


def do_usertree(interp, spec, cmd) -> None:
    """MrBayes 3.2.7a refuses `usertree` with this message; mbgpu does the same."""
    raise cmd.error("usertree command deprecated: define the tree in a trees block and use 'startvals' instead",
                    cmd.tokens[0], CommandError)


def do_report(interp, spec, cmd) -> None:
    """`report [applyto=(...)] ancstates=yes siterates=yes`: kept per division, as MrBayes does."""
    s = interp.settings
    pairs = assignments(spec, cmd)
    applyto = next((value for name, value, _ in pairs if name == "Applyto"), "all")
    if s.matrix is not None:
        bad = [i for i in (applyto if applyto != "all" else ()) if i > len(s.divisions)]
        if bad:
            raise cmd.error("applyto=(%d): there are only %d divisions" % (bad[0], len(s.divisions)),
                            cmd.tokens[0], CommandError)
    for name, value, _ in pairs:
        s.report[name] = value
        if name != "Applyto" and s.matrix is not None:
            for i in s.division_indices(applyto):
                s.divisions[i].report[name] = value


_HANDLERS = {
    "Set": do_set, "Lset": lambda i, s, c: _model(i, s, c, "lset"),
    "Prset": lambda i, s, c: _model(i, s, c, "prset"), "Mcmc": do_mcmc,
    "Mcmcp": lambda i, s, c: do_mcmc(i, s, c, run=False), "Sump": do_summary, "Sumt": do_summary,
    "Ss": do_ss, "Ssp": lambda i, s, c: do_ss(i, s, c, run=False), "Sumss": do_sumss,
    "Charset": do_charset, "Partition": do_partition, "Unlink": do_link, "Link": do_link,
    "Outgroup": do_outgroup, "Startvals": do_startvals, "Log": do_log, "Execute": do_execute,
    "Help": do_help, "Showmodel": do_showmodel, "Quit": do_quit, "Report": do_report,
    "Exclude": do_exclude, "Include": do_exclude, "Ctype": lambda i, s, c: _with_data(do_ctype, i, s, c),
    "Charstat": lambda i, s, c: _with_data(do_charstat, i, s, c), "Usertree": do_usertree,
    "Showmatrix": lambda i, s, c: _with_data(do_showmatrix, i, s, c),
    "Taxset": lambda i, s, c: _with_data(do_taxset, i, s, c),
    "Constraint": lambda i, s, c: _with_data(do_constraint, i, s, c),
    "Delete": lambda i, s, c: _with_data(do_delete, i, s, c),
    "Taxastat": lambda i, s, c: _with_data(do_taxastat, i, s, c),
    "Restore": lambda i, s, c: _with_data(do_delete, i, s, c), "Propset": do_propset,
    "Calibrate": lambda i, s, c: _with_data(do_calibrate, i, s, c),
}


def _with_data(handler, interp, spec, cmd) -> None:
    _need_data(interp, cmd)
    handler(interp, spec, cmd)


_TAKE_CTYPES = ("Lset", "Prset", "Exclude", "Include", "Link", "Unlink")
#: the commands after which MrBayes 3.2.7a sets up its model (SetUpAnalysis) and so checks the formats of
#: shared rate multipliers (report_formats.unify_ratemult; measured with mb-double after report, prset, link)
_SET_UP_MODEL = ("Lset", "Prset", "Report", "Link", "Unlink")


def run(interp, spec, cmd) -> None:
    """Execute one resolved command (and after those that make MrBayes' model read the character types,
    take them in: mbgpu.commands.char_cmds; after those that make it set up its model, give shared rate
    multipliers one report format, with its warning)."""
    _HANDLERS.get(spec.name, do_stored)(interp, spec, cmd)
    forget_after(interp.settings, spec.name)
    if spec.name in _TAKE_CTYPES:
        take_ctypes(interp, cmd)
    s = interp.settings
    if spec.name in _SET_UP_MODEL and s.matrix is not None:
        for line in report_formats.unify_ratemult(s.divisions, link_groups(s, "ratemult")):
            interp.console.print(line)
