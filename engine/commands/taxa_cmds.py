"""The commands about taxa: `taxset NAME = taxa;`, `constraint NAME [hard|negative|partial] = taxa [: taxa];`
(MrBayes' syntax; the constraints take effect through `prset topologypr=constraints(...)`), and `delete`
/ `restore` (the analysis then runs over the included taxa: mbgpu.deleted_taxa)."""
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


def do_delete(interp, spec, cmd) -> None:
    """`delete taxa;` / `restore taxa;` (names, numbers, ranges, taxsets, all). MrBayes refuses a delete
    that leaves fewer than two taxa; an analysis needs three (checked at mcmc)."""
    s = interp.settings
    words = [t.text for t in cmd.tokens[1:]]
    if not words:
        raise cmd.error("%s needs taxa (names, numbers, taxsets or all)" % spec.name.lower(), cmd.tokens[0],
                        CommandError)
    try:
        named = taxon_list(words, s.matrix.taxa, s.taxsets)
    except CommandError as err:
        raise cmd.error("%s: %s" % (spec.name.lower(), err.message), cmd.tokens[1], CommandError) from None
    deleted = s.deleted | named if spec.name == "Delete" else s.deleted - named
    left = s.matrix.ntax - len(deleted)
    if left < 2:
        raise cmd.error("there must be at least two included taxa, now there %s %s"
                        % ("is" if left == 1 else "are", left or "none"), cmd.tokens[1], CommandError)
    s.deleted = deleted
    interp.console.print("   %s taxa: %d of %d included" % ("Excluding" if spec.name == "Delete" else "Restoring",
                                                            left, s.matrix.ntax))
