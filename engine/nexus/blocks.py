"""Split NEXUS text into commands grouped by block (`begin NAME; ... end;`), in file order.

A matrix command keeps its raw text span, because matrix rows depend on line breaks and on the
format (datatype, interleave) declared earlier in the block.

Only the blocks MrBayes 3.2.7a reads (`READ_BLOCKS`) are split into commands; any other block
(`sets`, `assumptions`, `paup`, `notes`, `codons`, `mesquite`, ...) is passed over unread, up to its
`end;` or `endblock;`, and reported as one `BlockEvent` of kind 'skip'.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, Union

from mbgpu.errors import NexusError

from .tokenizer import Source, Token, next_token, read_quoted, skip_blank, skip_comment

# The blocks MrBayes 3.2.7a reads (DoBeginParm in its command.c); it skips every other block with
# the note `Skipping "NAME" block`, established by running bin/mb on each kind (tests/test_nexus).
READ_BLOCKS = frozenset({"data", "characters", "taxa", "trees", "mrbayes"})
_END = re.compile(r"(?i)(?:end|endblock)(?=[\s;\[]|$)")


@dataclass
class Command:
    """One command: its block ('' outside any), tokens up to the ';', and for `matrix` its raw span."""

    block: str
    tokens: list[Token]
    src: Source
    raw: tuple[int, int] | None = None
    block_start: int = 0

    @property
    def name(self) -> str:
        return self.tokens[0].lower() if self.tokens else ""

    @property
    def pos(self) -> int:
        return self.tokens[0].pos if self.tokens else 0

    def error(self, message: str, token: Token | None = None, cls=NexusError):
        return self.src.error(token.pos if token is not None else self.pos, message, cls)


@dataclass
class BlockEvent:
    """`begin NAME;` or `end;` of a block that is read (kind 'begin'/'end'), or a skipped block ('skip')."""

    kind: str
    name: str  # as written in the file (MrBayes' note shows it so)
    pos: int
    src: Source

    @property
    def block(self) -> str:
        return self.name.lower()


Item = Union[Command, BlockEvent]


_STOPS = re.compile(r"[;\['\"]")


def find_semicolon(src: Source, pos: int) -> int:
    """Offset of the next ';' outside comments and quotes; an error if the text ends first (the text
    between the characters that matter is skipped by one regular-expression search: matrices are big)."""
    text, start = src.text, pos
    while True:
        found = _STOPS.search(text, pos)
        if found is None:
            raise src.error(start, "unterminated command: no ';' before the end of the file")
        pos = found.start()
        ch = text[pos]
        if ch == ";":
            return pos
        if ch == "[":
            pos = skip_comment(src, pos)
        else:
            pos = read_quoted(src, pos)[1]


def _read_command(src: Source, pos: int) -> tuple[list[Token], int, tuple[int, int] | None]:
    """Tokens of one command starting at `pos` (';' consumed); matrix commands keep a raw span."""
    tokens: list[Token] = []
    while True:
        tok, pos = next_token(src, pos)
        if tok is None:
            where = tokens[0].pos if tokens else pos
            raise src.error(where, "unterminated command: no ';' before the end of the file")
        if tok.is_punct(";"):
            return tokens, pos, None
        tokens.append(tok)
        if len(tokens) == 1 and tok.kind == "word" and tok.lower() == "matrix":
            end = find_semicolon(src, pos)
            return tokens, end + 1, (pos, end)


def check_header(src: Source) -> int:
    """Offset after the mandatory `#NEXUS` header (leading comments and blanks allowed)."""
    tok, pos = next_token(src, 0)
    if tok is None or tok.lower() != "#nexus":
        where = tok.pos if tok is not None else 0
        raise src.error(where, "not a NEXUS file: it must start with #NEXUS")
    return pos


def skip_block(src: Source, pos: int, start: int, name: str, *, open_ok: bool = False) -> int:
    """Offset after the `end;` or `endblock;` that closes a skipped block whose body starts at `pos`.

    The block is read command by command, so an `end;` inside a quoted label or a (nested) comment
    does not close it. (MrBayes 3.2.7a stops at the first word `end` wherever it stands, even quoted
    or in a comment, and then fails on the rest; such a file is read correctly here.)
    """
    text = src.text
    while True:
        pos = skip_blank(src, pos)
        if pos >= len(text):
            if open_ok:
                return pos
            raise src.error(start, "block '%s' is not closed with end;" % name)
        semi = find_semicolon(src, pos)
        if _END.match(text, pos):
            return semi + 1
        pos = semi + 1


@dataclass
class _State:
    block: str = ""
    start: int = 0
    opened: bool = False  # inside a `begin NAME;` (at the prompt `begin mrbayes; ... end;` works too)


def iter_commands(src: Source, pos: int = 0, *, in_block: str = "", outside: str = "",
                  read: frozenset = READ_BLOCKS) -> Iterator[Item]:
    """Yield every command of the text from `pos` in order, with a `BlockEvent` for each `begin`/`end`.

    `in_block` names the block that text outside any `begin` belongs to at the interactive prompt
    ('mrbayes'; a block may stay open there). In a file (`in_block` ''), commands outside any block
    belong to `outside` ('mrbayes': MrBayes runs them as typed at its prompt; '': an error), and every
    block must be closed. Blocks not named in `read` are skipped whole (`skip_block`) and yield one
    event of kind 'skip'.
    """
    st = _State(block=in_block)
    while True:
        tok, _ = next_token(src, pos)
        if tok is None:
            if st.opened and not in_block:
                raise src.error(st.start, "block '%s' is not closed with end;" % st.block)
            return
        tokens, pos, raw = _read_command(src, pos)
        head = tokens[0].lower() if tokens else ""
        if head == "begin":
            if st.opened and not in_block:
                raise src.error(tokens[0].pos, "'begin' inside block '%s' (missing end;?)" % st.block)
            if len(tokens) != 2:
                raise src.error(tokens[0].pos, "expected 'begin NAME;'")
            name = tokens[1].text
            if name.lower() not in read:
                yield BlockEvent("skip", name, tokens[0].pos, src)
                pos = skip_block(src, pos, tokens[0].pos, name, open_ok=bool(in_block))
                continue
            st.block, st.start, st.opened = name.lower(), tokens[0].pos, True
            yield BlockEvent("begin", name, tokens[0].pos, src)
            continue
        if head in ("end", "endblock"):
            if not st.opened:
                raise src.error(tokens[0].pos, "'%s' without a matching begin" % head)
            yield BlockEvent("end", st.block, tokens[0].pos, src)
            st.block, st.opened = in_block, False
            continue
        if not tokens:
            continue  # an empty command (';;') is harmless
        if not st.block and not outside:
            raise src.error(tokens[0].pos, "expected 'begin NAME;' but found '%s'" % tokens[0].text)
        if not st.block:
            yield Command(outside, tokens, src, raw, tokens[0].pos)
            continue
        yield Command(st.block, tokens, src, raw, st.start)
