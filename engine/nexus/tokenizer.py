"""NEXUS tokenizer: words, quoted labels, punctuation, nested [comments], with line/column positions.

The tokenizer knows nothing of commands; it turns text into `Token`s and keeps enough of the source
(`Source`) for matrix reading, which needs line breaks and raw characters.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from mbgpu.errors import Location, NexusError

PUNCT = set(";=,(){}:")
_WORD = re.compile(r"[^\s\[\]'\";=,(){}:]+")


@dataclass(frozen=True)
class Token:
    """One token: kind is 'word', 'string' (a quoted label, quotes removed) or 'punct'."""

    kind: str
    text: str
    pos: int  # offset in the source text

    def is_punct(self, ch: str) -> bool:
        return self.kind == "punct" and self.text == ch

    def lower(self) -> str:
        return self.text.lower()


class Source:
    """Text of one file with offset -> (line, column) mapping; CRLF and LF both accepted."""

    def __init__(self, text: str, name: str = "<input>"):
        self.text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.name = name
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]

    def where(self, pos: int) -> Location:
        line = bisect.bisect_right(self._line_starts, pos)
        col = pos - self._line_starts[line - 1] + 1
        return Location(self.name, line, col)

    def error(self, pos: int, message: str, cls=NexusError):
        """An error of type `cls` located at offset `pos`."""
        return cls(message, self.where(pos))


def skip_comment(src: Source, pos: int) -> int:
    """`pos` is at '['; return the offset just after the matching ']' (comments nest)."""
    text, depth, start = src.text, 0, pos
    while pos < len(text):
        ch = text[pos]
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return pos + 1
        pos += 1
    raise src.error(start, "unterminated comment (a '[' without its ']')")


def skip_blank(src: Source, pos: int, stop_at_newline: bool = False) -> int:
    """Skip whitespace and comments from `pos`; optionally stop on a newline (returned at it)."""
    text = src.text
    while pos < len(text):
        ch = text[pos]
        if ch == "\n" and stop_at_newline:
            return pos
        if ch.isspace():
            pos += 1
        elif ch == "[":
            pos = skip_comment(src, pos)
        else:
            return pos
    return pos


def read_quoted(src: Source, pos: int) -> tuple[str, int]:
    """`pos` is at a quote; return (label, offset after it). A doubled quote stands for one."""
    text, q, start = src.text, src.text[pos], pos
    out = []
    pos += 1
    while pos < len(text):
        ch = text[pos]
        if ch == q:
            if pos + 1 < len(text) and text[pos + 1] == q:
                out.append(q)
                pos += 2
                continue
            return "".join(out), pos + 1
        out.append(ch)
        pos += 1
    raise src.error(start, "unterminated quoted label (a %s without its closing quote)" % q)


def next_token(src: Source, pos: int) -> tuple[Token | None, int]:
    """The token starting at or after `pos` (None at end of text) and the offset after it."""
    pos = skip_blank(src, pos)
    text = src.text
    if pos >= len(text):
        return None, pos
    ch = text[pos]
    if ch in "'\"":
        label, end = read_quoted(src, pos)
        return Token("string", label, pos), end
    if ch in PUNCT:
        return Token("punct", ch, pos), pos + 1
    if ch == "]":
        raise src.error(pos, "unexpected ']' outside a comment")
    m = _WORD.match(text, pos)
    assert m is not None, "a non-blank character must start a word"
    return Token("word", m.group(0), pos), m.end()


def tokenize(src: Source, start: int = 0, end: int | None = None) -> list[Token]:
    """All tokens between offsets `start` and `end` (default: to the end)."""
    stop = len(src.text) if end is None else end
    out, pos = [], start
    while True:
        tok, pos = next_token(src, pos)
        if tok is None or tok.pos >= stop:
            return out
        out.append(tok)
