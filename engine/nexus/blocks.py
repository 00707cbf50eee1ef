"""Split NEXUS text into commands grouped by block (`begin NAME; ... end;`), in file order.

A matrix command keeps its raw text span, because matrix rows depend on line breaks and on the
format (datatype, interleave) declared earlier in the block.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from mbgpu.errors import NexusError

from .tokenizer import Source, Token, next_token, read_quoted, skip_comment


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


def find_semicolon(src: Source, pos: int) -> int:
    """Offset of the next ';' outside comments and quotes; an error if the text ends first."""
    text, start = src.text, pos
    while pos < len(text):
        ch = text[pos]
        if ch == ";":
            return pos
        if ch == "[":
            pos = skip_comment(src, pos)
        elif ch in "'\"":
            pos = read_quoted(src, pos)[1]
        else:
            pos += 1
    raise src.error(start, "unterminated command: no ';' before the end of the file")


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


@dataclass
class _State:
    block: str = ""
    start: int = 0
    blocks_seen: list = field(default_factory=list)


def iter_commands(src: Source, pos: int = 0, *, in_block: str = "") -> Iterator[Command]:
    """Yield every command of the text from `pos` in order; `begin`/`end` are consumed here.

    `in_block` names the block that text outside any `begin` belongs to ('' for files, where such
    text is an error; 'mrbayes' for the interactive prompt).
    """
    st = _State(block=in_block)
    while True:
        tok, _ = next_token(src, pos)
        if tok is None:
            if st.block and not in_block:
                raise src.error(st.start, "block '%s' is not closed with end;" % st.block)
            return
        tokens, pos, raw = _read_command(src, pos)
        head = tokens[0].lower() if tokens else ""
        if head == "begin":
            if st.block and not in_block:
                raise src.error(tokens[0].pos, "'begin' inside block '%s' (missing end;?)" % st.block)
            if len(tokens) != 2:
                raise src.error(tokens[0].pos, "expected 'begin NAME;'")
            st.block, st.start = tokens[1].lower(), tokens[0].pos
            continue
        if head in ("end", "endblock"):
            if not st.block or st.block == in_block:
                raise src.error(tokens[0].pos, "'%s' without a matching begin" % head)
            st.block = in_block
            continue
        if not tokens:
            continue  # an empty command (';;') is harmless
        if not st.block:
            raise src.error(tokens[0].pos, "expected 'begin NAME;' but found '%s'" % tokens[0].text)
        yield Command(st.block, tokens, src, raw, st.start)
