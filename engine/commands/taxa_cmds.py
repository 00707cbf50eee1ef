"""The commands that name groups of taxa: `taxset NAME = taxa;` and `constraint NAME [hard|negative|partial]
= taxa [: taxa];` (MrBayes' syntax; the constraints take effect through `prset topologypr=constraints(...)`)."""
from __future__ import annotations

from mbgpu.constraints import parse_constraint, taxon_list
from mbgpu.errors import CommandError


def do_taxset(interp, spec, cmd) -> None:
    """`taxset NAME = taxa;`: a named group of taxa for constraints."""
    s = interp.settings
    words = [t.text for t in cmd.tokens[1:]]
    if len(words) < 3 or words[1] != "=":
        raise cmd.error("expected 'taxset NAME = taxa;'", cmd.tokens[0], CommandError)
    try:
        s.taxsets[words[0].lower()] = taxon_list(words[2:], s.matrix.taxa, s.taxsets)
    except CommandError as err:
        raise cmd.error("taxset %s: %s" % (words[0], err.message), cmd.tokens[1], CommandError) from None
    interp.console.print("   Defining taxset called '%s'" % words[0])


def do_constraint(interp, spec, cmd) -> None:
    """`constraint NAME [hard|negative|partial] = taxa [: taxa];`: defined now, used by topologypr."""
    s = interp.settings
    try:
        c = parse_constraint([t.text for t in cmd.tokens[1:]], s.matrix.taxa, s.taxsets)
    except CommandError as err:
        raise cmd.error(err.message, cmd.tokens[1] if len(cmd.tokens) > 1 else cmd.tokens[0],
                        CommandError) from None
    s.constraints[c.name.lower()] = c
    interp.console.print("   Defining constraint called '%s'" % c.name)
