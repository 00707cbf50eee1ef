"""The commands about taxa: `taxset NAME = taxa;`, `constraint NAME [hard|negative|partial] = taxa [: taxa];`
(MrBayes' syntax; the constraints take effect through `prset topologypr=constraints(...)`), and `delete`
/ `restore` (the analysis then runs over the included taxa: mbgpu.deleted_taxa)."""
from __future__ import annotations

from mbgpu.constraints import parse_constraint, taxon_list
from mbgpu.errors import CommandError
from mbgpu.summary.outgroup import remember_outgroup


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
    if left < 3:     # MrBayes 3.2.7a's check and words (mb-double): two left is "only one" too
        raise cmd.error("there must be at least two included taxa, now there is %s" % ("only one" if left else "none"),
                        cmd.tokens[1], CommandError)
    s.deleted = deleted
    remember_outgroup(s)    # MrBayes rebuilds its taxon list here, localOutGroup included (sumt's quirk)
    interp.console.print("   %s taxa: %d of %d included" % ("Excluding" if spec.name == "Delete" else "Restoring",
                                                            left, s.matrix.ntax))


_SP = "   "    # MrBayes' spacer inside an executed file: the lines below are its own, byte for byte
_MARK = {"hard": ("*", "*"), "partial": ("+", "-"), "negative": ("#", "#")}


def do_taxastat(interp, spec, cmd) -> None:
    """`taxastat;` in MrBayes' layout: included or deleted, each constraint's membership, the outgroup."""
    s, out = interp.settings, interp.console.print
    taxa, cons = s.matrix.taxa, list(s.constraints.values())
    width = max(len(t) for t in taxa)
    included = len(taxa) - len(s.deleted)
    out("%s   Showing taxon status:\n" % _SP)
    out("%s     Number of taxa        = %d (%s)" % (_SP, len(taxa), "all of which are included" if not s.deleted
                                                    else "of which %d are included" % included))
    out("%s     Number of constraints = %d\n" % (_SP, len(cons)))
    if cons:
        for j, c in enumerate(cons, 1):
            out("%s     %2d -- Trees with '%s' constraint \"%s\" are infinitely" % (_SP, j, c.kind, c.name))
            out("%s           more probable than those without " % _SP)
        out("")
        out(" " * width + "                             Constraints")
    out("%s     Taxon  %s   Inclusion   %s" % (_SP, " " * width, "".join(" %2d" % j for j in range(1, len(cons) + 1))))
    out("%s   -------%s--------------%s" % (_SP, "-" * width, ("----" + "---" * len(cons)) if cons else ""))
    for i, name in enumerate(taxa):
        marks = "".join("  " + (_MARK[c.kind][0] if i in c.taxa else _MARK[c.kind][1] if i in c.other else ".")
                        for c in cons)
        out("%s %s%4d (%s) %s -- %s    %s" % (_SP, "->" if i == s.outgroup else "  ", i + 1, name,
                                           " " * (width - len(name)), "Deleted " if i in s.deleted else "Included",
                                           marks))
    out("")
    for line in ("'.' indicate that the taxon is not present in the constraint. ",
                 "'*' indicate that the taxon is present in the 'hard' constraint. ",
                 "'+' indicate that the taxon is present in the first groupe of 'partial' constraint. ",
                 "'-' indicate that the taxon is present in the second groupe of 'partial' constraint. ",
                 "'#' indicate that the taxon is present in the 'negative' constraint. ",
                 "Arrow indicates current outgroup. "):
        out("%s   %s" % (_SP, line))
