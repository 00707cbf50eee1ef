"""Character-set expressions of `charset` and `partition`: `1-10 12 20-.\\3 name ...` -> column indices.

Numbers are 1-based as in NEXUS; '.' is the last character; `a-b\\k` takes every k-th from a.
"""
from __future__ import annotations

import re

from mbgpu.errors import CommandError

_ITEM = re.compile(r"^(\d+|\.)(?:-(\d+|\.))?(?:\\(\d+))?$")


def normalise(words: list[str]) -> list[str]:
    """Join `1 - 10 \\ 3` written with spaces into `1-10\\3` items."""
    text = " ".join(words)
    text = re.sub(r"\s*-\s*", "-", text)
    text = re.sub(r"\s*\\\s*", "\\\\", text)
    return text.split()


def expand(items: list[str], nchar: int, charsets: dict[str, list[int]]) -> list[int]:
    """Sorted 0-based column indices of a charset expression; errors name the offending item."""
    cols: set[int] = set()
    for item in items:
        cols.update(_expand_item(item, nchar, charsets))
    return sorted(cols)


def _number(text: str, nchar: int) -> int:
    return nchar if text == "." else int(text)


def _expand_item(item: str, nchar: int, charsets: dict[str, list[int]]) -> list[int]:
    m = _ITEM.match(item)
    if m is None:
        for name, cols in charsets.items():
            if name.lower() == item.lower():
                return cols
        raise CommandError("'%s' is neither a character range nor a defined charset" % item)
    first = _number(m.group(1), nchar)
    last = _number(m.group(2), nchar) if m.group(2) else first
    step = int(m.group(3)) if m.group(3) else 1
    if step < 1:
        raise CommandError("step in '%s' must be at least 1" % item)
    if not 1 <= first <= nchar or not 1 <= last <= nchar:
        raise CommandError("character range '%s' is outside 1-%d (nchar)" % (item, nchar))
    if last < first:
        raise CommandError("character range '%s' runs backwards" % item)
    return list(range(first - 1, last, step))
