"""The commands about characters' types and status: `ctype TYPE: characters;` and `charstat;`.

MrBayes 3.2.7a reads a `ctype` into its character table at once, but its model takes the types in only
at the next lset, prset, exclude, include, link, unlink or `set partition` (measured with mb-double:
a ctype with none of these after it changes nothing, and one after the last of them neither). mbgpu
keeps both: `Settings.ordered` (the table, what charstat shows) and `Settings.ordered_model` (what the
analysis uses), and says at `mcmc` when they differ instead of differing from MrBayes silently.
"""
from __future__ import annotations

import numpy as np

from mbgpu import charsets as cs
from mbgpu.commands.params import resolve
from mbgpu.errors import CommandError, ModelError, NotImplementedYet
from mbgpu.models.spec import MAX_ORDERED_STATES
from mbgpu.patterns import standard_state_counts

CTYPES = ("Unordered", "Ordered", "Dollo", "Irreversible")
# why the other two are refused (measured with mb-double, 2026-11-27): MrBayes 3.2.7a has no model for them.
# With an lset after the ctype it stops ("Irreversible model not yet supported") or computes lnL = -nan
# (dollo); without one it runs either type alone as unordered (the same Gen-0 lnL) and the two together
# with a third, different lnL. Accepting them would copy a bug, not a model.
_REFUSED = {"Dollo": "MrBayes 3.2.7a computes no likelihood for them",
            "Irreversible": "MrBayes 3.2.7a refuses them at the next lset"}


def do_ctype(interp, spec, cmd) -> None:
    """`ctype TYPE: characters;` on the standard characters named (other datatypes stay unordered)."""
    toks, s = cmd.tokens, interp.settings
    if len(toks) < 4 or not toks[2].is_punct(":"):
        raise cmd.error("expected 'ctype TYPE: characters;' (TYPE: %s)" % ", ".join(CTYPES).lower(),
                        toks[0], CommandError)
    try:
        kind = resolve(toks[1].text, CTYPES, "character type")
    except CommandError as err:
        raise cmd.error(err.message, toks[1], CommandError) from None
    if kind in _REFUSED:
        raise cmd.error("ctype %s is not supported yet (%s)" % (kind.lower(), _REFUSED[kind]), toks[1],
                        NotImplementedYet)
    try:
        cols = cs.expand(cs.normalise([t.text for t in toks[3:]]), s.matrix.nchar, s.charsets)
    except CommandError as err:
        raise cmd.error(err.message, toks[3], CommandError) from None
    standard = [j for j in cols if s.matrix.datatypes[j] == "standard"]
    interp.console.print("   Setting characters to %s" % kind.lower())
    if len(standard) < len(cols):
        interp.console.print("   Ctype not applied to characters of other datatypes, which must be unordered")
    s.ordered = s.ordered | frozenset(standard) if kind == "Ordered" else s.ordered - frozenset(standard)
    interp.console.print("   Ctype was applied to %d standard characters" % len(standard))


def take_ctypes(interp, cmd) -> None:
    """What MrBayes' lset, prset, exclude, include, link, unlink and `set partition` do to the types:
    the model takes the character table's, after checking that no included ordered character has more than
    MAX_ORDERED_STATES states (MrBayes: "Only unordered model supported for characters with more than
    6 states")."""
    s = interp.settings
    if s.matrix is None or s.ordered == s.ordered_model:
        return
    cols = np.array(sorted(s.ordered - s.excluded), dtype=np.int64)      # MrBayes checks included ones
    if cols.size:
        k = standard_state_counts(s.matrix.masks, cols, len(s.matrix.states("standard")), s.matrix.blank)
        if (k > MAX_ORDERED_STATES).any():
            j = int(np.argmax(k > MAX_ORDERED_STATES))
            raise cmd.error("only the unordered model is supported for characters with more than %d states: "
                            "character %d is ordered and has %d (as in MrBayes)"
                            % (MAX_ORDERED_STATES, cols[j] + 1, k[j]), cmd.tokens[0], ModelError)
    s.ordered_model = s.ordered


def pending_ctypes(settings) -> str | None:
    """The note `mcmc` prints where the character table's types are not the model's (None: they are)."""
    late_on, late_off = settings.ordered - settings.ordered_model, settings.ordered_model - settings.ordered
    if not late_on and not late_off:
        return None
    what = []
    if late_on:
        what.append("%d character%s set ordered %s analysed as unordered"
                    % (len(late_on), "" if len(late_on) == 1 else "s", "is" if len(late_on) == 1 else "are"))
    if late_off:
        what.append("%d character%s set unordered again %s still analysed as ordered"
                    % (len(late_off), "" if len(late_off) == 1 else "s", "is" if len(late_off) == 1 else "are"))
    return ("   WARNING: %s:\n"
            "            MrBayes 3.2.7a's model takes ctype in only at the next lset, prset, exclude,\n"
            "            include, link, unlink or set partition, and mbgpu does the same" % "; ".join(what))


_SP = "   "      # MrBayes' spacer inside an executed file: its lines here are its own, byte for byte


def do_charstat(interp, spec, cmd) -> None:
    """`charstat;` in MrBayes' layout (its pause every 100 characters left out: output is not paged)."""
    s, con = interp.settings, interp.console
    names = list(s.partitions)
    con.print("%s   %d character partition%s defined:" % (_SP, len(names), "" if len(names) == 1 else "s"))
    for i, name in enumerate(names, 1):
        con.print("%s      Partition %d (\"%s\") divides the characters into %d parts"
                  % (_SP, i, name, len(s.partitions[name])))
    con.print("%s      Current partition is \"%s\"" % (_SP, s.partition))
    con.print("")
    con.print("%s   Showing character status:\n" % _SP)
    con.print("%s                                                    Partition(s)" % _SP)
    con.print("%s      #      Type      In/Out    Ambiguity Order  %s"
              % (_SP, "".join(" %2d" % i for i in range(1, len(names) + 1))))
    con.print("%s   -----------------------------------------------%s" % (_SP, "---" * len(names)))
    for line in charstat_rows(s):
        con.print(line)


_TYPE = {"dna": "   DNA", "rna": "   RNA", "protein": "  Prot", "standard": " Stand"}


def charstat_rows(s) -> list[str]:
    """One line per character: type, states, in/out, MissAmbig, order and its division in each partition."""
    m = s.matrix
    ids = np.zeros((m.nchar, len(s.partitions)), dtype=np.int64)
    for p, divs in enumerate(s.partitions.values()):
        for d, cols in enumerate(divs, 1):
            ids[np.asarray(cols, dtype=np.int64), p] = d
    ambiguous = m.miss_ambig if m.miss_ambig is not None else ((m.masks & (m.masks - np.uint32(1))) != 0).any(axis=0)
    std = np.array([j for j in range(m.nchar) if m.datatypes[j] == "standard"], dtype=np.int64)
    k = dict(zip(std.tolist(), standard_state_counts(m.masks, std, len(m.states("standard")), m.blank).tolist())) \
        if std.size else {}
    out = []
    for j in range(m.nchar):
        dt = m.datatypes[j]
        n = k[j] if dt == "standard" else len(m.states(dt))
        out.append("%s   %4d -- %s  %2d  %s  %s %s  %s" % (
            _SP, j + 1, _TYPE[dt], n, "Excluded" if j in s.excluded else "Included",
            "MissAmbig" if ambiguous[j] else "     None", "  Ord" if j in s.ordered else "Unord",
            "".join(" %2d" % v for v in ids[j])))
    return out
