"""Handlers of data/characters/taxa and trees blocks: dimensions, format, matrix, translate, tree."""
from __future__ import annotations

from dataclasses import dataclass, field

from mbgpu.charmatrix import CharacterMatrix, Format, encode
from mbgpu.commands.params import resolve
from mbgpu.commands.values import parse_assignments
from mbgpu.datatypes import DATATYPES
from mbgpu.errors import CommandError, DataError, NexusError
from mbgpu.settings import TreeRecord

from .blocks import Command
from .matrix import read_rows


@dataclass
class DataBlockState:
    """What a data block has declared so far."""

    ntax: int | None = None
    nchar: int | None = None
    fmt: Format = field(default_factory=Format)
    taxlabels: list[str] | None = None


def _int_value(cmd: Command, a, what: str) -> int:
    if a.value is None or a.value.args is not None or not a.value.head.isdigit() or int(a.value.head) < 1:
        raise cmd.error("%s must be a positive integer" % what, a.name, DataError)
    return int(a.value.head)


def dimensions(cmd: Command, st: DataBlockState) -> None:
    for a in parse_assignments(cmd.tokens[1:], cmd.src):
        key = a.name.lower()
        if key == "ntax":
            st.ntax = _int_value(cmd, a, "ntax")
        elif key == "nchar":
            st.nchar = _int_value(cmd, a, "nchar")
        elif key != "newtaxa":
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
    if st.ntax is None or st.nchar is None:
        raise cmd.error("matrix before 'dimensions ntax=... nchar=...'", None, DataError)
    if st.fmt.datatype == "mixed":
        for dt, a, b in st.fmt.mixed:
            if not 1 <= a <= b <= st.nchar:
                raise cmd.error("datatype=mixed range %s:%d-%d is outside 1-%d" % (dt, a, b, st.nchar),
                                None, DataError)
    rows = read_rows(cmd.src, cmd.raw, st.ntax, st.nchar, st.fmt.interleave, st.taxlabels)
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
