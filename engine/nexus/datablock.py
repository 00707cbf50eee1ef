"""Handlers of data/characters/taxa and trees blocks: dimensions, format, matrix, translate, tree.

`DataBlocks` keeps what those blocks define across a session, by MrBayes 3.2.7a's rules (each one
established by running bin/mb; see tests/test_nexus/test_taxa_characters.py):

- a taxa block (`dimensions ntax=N; taxlabels ...;`) defines the taxa and forgets the matrix;
  ended without taxlabels, it defines nothing (MrBayes prints a note);
- a characters block after it takes ntax from it (`dimensions nchar=M`), and its matrix rows are
  those taxa in taxlabels order;
- a data block defines its own taxa from its matrix rows and forgets the taxa block's.

Where MrBayes would misread a file silently (it ignores the row labels of a characters block, so
rows in another order or with unknown labels get the wrong taxon's data) the file is refused with
one error line instead. Standard NEXUS that MrBayes refuses but that has one meaning is read:
`ntax`/`newtaxa` in a characters block, `title`/`link`/`blockid`, `charstatelabels` and the like
(ignored).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mbgpu.charmatrix import CharacterMatrix, Format, encode
from mbgpu.commands.params import resolve
from mbgpu.commands.values import parse_assignments
from mbgpu.datatypes import DATATYPES
from mbgpu.errors import CommandError, DataError, NexusError
from mbgpu.settings import TreeRecord

from .blocks import BlockEvent, Command
from .matrix import read_rows

IGNORED = ("charstatelabels", "charlabels", "statelabels", "eliminate", "options", "title", "link", "blockid")
NO_LABELS_NOTE = "      Leaving taxa block without taxon labels being defined"  # MrBayes' words


@dataclass
class DataBlockState:
    """What the current data, characters or taxa block has declared so far."""

    kind: str = "data"
    ntax: int | None = None
    nchar: int | None = None
    newtaxa: bool = False
    fmt: Format = field(default_factory=Format)
    taxlabels: list[str] | None = None  # labels rows may use, any order (taxlabels in a data block)
    order: list[str] | None = None  # labels rows must have, in this order (characters after a taxa block)


class DataBlocks:
    """The taxa, data and characters blocks of one session: the taxa in force and the current block."""

    def __init__(self) -> None:
        self.taxa: list[str] | None = None  # from the last taxa block with labels, or the last matrix
        self.unlabelled_taxa = False  # the last taxa block ended without taxlabels
        self.block: DataBlockState | None = None

    def begin(self, ev: BlockEvent) -> None:
        """`begin taxa|data|characters;`: a data block or a taxa block forgets the taxa in force."""
        self.block = DataBlockState(kind=ev.block)
        if ev.block in ("taxa", "data"):
            self.taxa, self.unlabelled_taxa = None, False

    def end(self, ev: BlockEvent) -> list[str]:
        """`end;` of a taxa/data/characters block; returns the notes to print."""
        st, self.block = self.block, None
        if st is not None and st.kind == "taxa":
            if st.taxlabels is None:
                self.unlabelled_taxa = True
                return [NO_LABELS_NOTE]
            self.taxa = st.taxlabels
        return []

    def command(self, cmd: Command) -> CharacterMatrix | None:
        """Run one command of the current block; a matrix command returns the new matrix."""
        st = self.block
        assert st is not None and st.kind == cmd.block, "a data command outside its block"
        name = cmd.name
        if name == "dimensions":
            dimensions(cmd, st)
            if st.kind == "characters":
                self._bind(cmd, st)
        elif name == "format" and st.kind != "taxa":
            format_command(cmd, st)
        elif name == "taxlabels":
            self._taxlabels(cmd, st)
        elif name == "matrix" and st.kind != "taxa":
            m = matrix(cmd, st)
            self.taxa, self.unlabelled_taxa = m.taxa, False
            return m
        elif name not in IGNORED:
            raise cmd.error("unknown command '%s' in a %s block" % (cmd.tokens[0].text, cmd.block),
                            cmd.tokens[0], NexusError)
        return None

    def _bind(self, cmd: Command, st: DataBlockState) -> None:
        """A characters block takes its taxa from the taxa in force unless it says `newtaxa`."""
        if st.newtaxa or (self.taxa is None and st.ntax is not None):
            if st.ntax is None:
                raise cmd.error("dimensions newtaxa needs ntax=N", None, DataError)
            return
        if self.taxa is None:
            why = ("the taxa block before it has no taxlabels" if self.unlabelled_taxa
                   else "no taxa block comes before it")
            raise cmd.error("a characters block takes its taxa from a taxa block, but %s (give 'begin taxa; "
                            "dimensions ntax=N; taxlabels ...; end;' first, or use a data block)" % why,
                            None, DataError)
        if st.ntax is not None and st.ntax != len(self.taxa):
            raise cmd.error("ntax=%d but the taxa block defines %d taxa" % (st.ntax, len(self.taxa)),
                            None, DataError)
        st.ntax, st.order = len(self.taxa), self.taxa

    def _taxlabels(self, cmd: Command, st: DataBlockState) -> None:
        if st.kind == "taxa" and st.ntax is None:
            raise cmd.error("taxlabels before 'dimensions ntax=N' in a taxa block", None, DataError)
        if st.order is not None:
            raise cmd.error("taxlabels in a characters block that takes its taxa from the taxa block "
                            "(say 'dimensions newtaxa ntax=N' to define new taxa here)", None, DataError)
        labels = taxlabels(cmd)
        if st.kind == "taxa" and len(labels) != st.ntax:
            raise cmd.error("taxlabels lists %d taxa but dimensions say ntax=%d" % (len(labels), st.ntax),
                            None, DataError)
        st.taxlabels = labels


def _int_value(cmd: Command, a, what: str) -> int:
    if a.value is None or a.value.args is not None or not a.value.head.isdigit() or int(a.value.head) < 1:
        raise cmd.error("%s must be a positive integer" % what, a.name, DataError)
    return int(a.value.head)


def dimensions(cmd: Command, st: DataBlockState) -> None:
    """`dimensions [newtaxa] ntax=N nchar=M`; a taxa block takes ntax only (as MrBayes)."""
    for a in parse_assignments(cmd.tokens[1:], cmd.src):
        key = a.name.lower()
        if key in ("nchar", "newtaxa") and st.kind == "taxa":
            raise cmd.error("%s is not allowed in a taxa block" % key, a.name, DataError)
        if key == "ntax":
            st.ntax = _int_value(cmd, a, "ntax")
        elif key == "nchar":
            st.nchar = _int_value(cmd, a, "nchar")
        elif key == "newtaxa":
            st.newtaxa = True
        else:
            raise cmd.error("unknown dimensions parameter '%s' (ntax, nchar)" % a.name.text, a.name)


def _mixed(cmd: Command, value) -> list[tuple[str, int, int]]:
    out = []
    for part in value.args or []:
        dt, _, rng = part.partition(":")
        try:
            dt = resolve(dt, DATATYPES, "datatype")
        except CommandError as err:
            raise cmd.error(err.message, value.token, DataError) from None
        first, _, last = rng.partition("-")
        if not first.isdigit() or not (last.isdigit() or last == ""):
            raise cmd.error("bad range '%s' in datatype=mixed(...)" % part, value.token, DataError)
        out.append((dt, int(first), int(last or first)))
    if not out:
        raise cmd.error("datatype=mixed needs (type:first-last, ...)", value.token, DataError)
    return out


def format_command(cmd: Command, st: DataBlockState) -> None:
    fmt = st.fmt
    for a in parse_assignments(cmd.tokens[1:], cmd.src):
        key, v = a.name.lower(), a.value
        text = v.head if v is not None else ""
        if key == "datatype":
            try:
                fmt.datatype = resolve(text, DATATYPES + ("mixed",), "datatype")
            except CommandError as err:
                raise cmd.error(err.message, a.name, DataError) from None
            if fmt.datatype == "mixed":
                fmt.mixed = _mixed(cmd, v)
        elif key == "interleave":
            fmt.interleave = v is None or text.lower() in ("yes", "y")
        elif key in ("gap", "missing", "matchchar"):
            if v is None or len(text) != 1:
                raise cmd.error("%s must be a single character" % key, a.name, DataError)
            setattr(fmt, key, text)
        elif key == "symbols":
            fmt.symbols = "".join(text.split()) if v is not None else None
        elif key not in ("respectcase", "labels", "nolabels", "equate", "tokens", "notokens", "transpose"):
            raise cmd.error("unknown format parameter '%s'" % a.name.text, a.name, DataError)


def matrix(cmd: Command, st: DataBlockState) -> CharacterMatrix:
    missing = [k for k in ("ntax", "nchar") if getattr(st, k) is None]
    if st.kind == "characters" and st.order is None and not st.newtaxa and missing == ["ntax", "nchar"]:
        missing = ["nchar"]  # no dimensions command at all: a taxa block may give ntax
    if missing:
        raise cmd.error("matrix before 'dimensions %s'" % " ".join(k + "=..." for k in missing), None, DataError)
    if st.fmt.datatype == "mixed":
        for dt, a, b in st.fmt.mixed:
            if not 1 <= a <= b <= st.nchar:
                raise cmd.error("datatype=mixed range %s:%d-%d is outside 1-%d" % (dt, a, b, st.nchar),
                                None, DataError)
    rows = read_rows(cmd.src, cmd.raw, st.ntax, st.nchar, st.fmt.interleave, st.taxlabels, st.order)
    try:
        return encode(rows, st.fmt, cmd.src, st.nchar)
    except DataError as err:
        if err.where is None:
            raise cmd.error(err.message, None, DataError) from None
        raise


def taxlabels(cmd: Command) -> list[str]:
    names = [t.text for t in cmd.tokens[1:]]
    if len(set(names)) != len(names):
        raise cmd.error("a taxon is repeated in taxlabels", None, DataError)
    return names


def translate(cmd: Command) -> dict[str, str]:
    """`translate key name, key name, ...;` -> {key: name}."""
    out: dict[str, str] = {}
    toks = cmd.tokens[1:]
    i = 0
    while i < len(toks):
        if i + 1 >= len(toks) or toks[i].kind == "punct" or toks[i + 1].kind == "punct":
            raise cmd.error("translate expects 'key name' pairs separated by commas", toks[i], NexusError)
        out[toks[i].text] = toks[i + 1].text
        i += 2
        if i < len(toks):
            if not toks[i].is_punct(","):
                raise cmd.error("expected ',' between translate pairs", toks[i], NexusError)
            i += 1
    return out


def _quote(tok) -> str:
    if tok.kind != "string":
        return tok.text
    return "'" + tok.text.replace("'", "''") + "'"


def tree(cmd: Command, table: dict[str, str]) -> TreeRecord:
    """`tree [*] NAME = [&U] (newick);` -> a TreeRecord (comments already dropped)."""
    toks = cmd.tokens[1:]
    if toks and toks[0].is_punct("*") or (toks and toks[0].text == "*"):
        toks = toks[1:]
    if len(toks) < 3 or not toks[1].is_punct("="):
        raise cmd.error("expected 'tree NAME = (newick);'", None, NexusError)
    newick = "".join(_quote(t) for t in toks[2:]) + ";"
    return TreeRecord(toks[0].text, newick, dict(table), cmd.src.where(toks[0].pos))
