"""Parse a command's tokens into `name = value` assignments (values may carry (...) and a :sub-value).

`lset nst=6 rates=invg`, `prset statefreqpr=fixed(0.3,0.3,0.2,0.2)`, `prset applyto=(all)`,
`prset brlenspr=unconstrained:exp(10)` all come out as `Assignment`s with their token positions.
"""
from __future__ import annotations

from dataclasses import dataclass

from mbgpu.errors import CommandError
from mbgpu.nexus.tokenizer import Token


@dataclass
class Value:
    """`head(args):sub` with head '' for a bare `(…)` list; args None when there were no parens."""

    head: str
    args: list[str] | None
    sub: "Value | None"
    token: Token

    def text(self) -> str:
        out = self.head
        if self.args is not None:
            out += "(" + ",".join(self.args) + ")"
        if self.sub is not None:
            out += ":" + self.sub.text()
        return out


@dataclass
class Assignment:
    """One `name[=value]` of a command; value is None for a bare flag."""

    name: Token
    value: Value | None


class TokenStream:
    """A cursor over a command's tokens that raises CommandError at the right place."""

    def __init__(self, tokens: list[Token], src):
        self.tokens, self.src, self.i = tokens, src, 0

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, what: str) -> Token:
        tok = self.peek()
        if tok is None:
            last = self.tokens[-1] if self.tokens else None
            pos = last.pos + len(last.text) if last else 0
            raise self.src.error(pos, "expected %s before ';'" % what, CommandError)
        self.i += 1
        return tok

    def error(self, tok: Token, message: str) -> CommandError:
        return self.src.error(tok.pos, message, CommandError)


def _parse_args(ts: TokenStream) -> list[str]:
    open_tok = ts.take("'('")
    args: list[str] = []
    current: list[str] = []
    while True:
        tok = ts.take("')' to close the '(' opened here")
        if tok.is_punct(")"):
            if current:
                args.append("".join(current))
            elif args:
                raise ts.error(tok, "empty value in the list")
            return args
        if tok.is_punct(","):
            if not current:
                raise ts.error(tok, "empty value in the list")
            args.append("".join(current))
            current = []
        elif tok.is_punct("(") or tok.is_punct(";"):
            raise ts.error(tok, "unexpected '%s' inside the list opened at column %d"
                           % (tok.text, ts.src.where(open_tok.pos).col))
        else:
            current.append(tok.text)


def parse_value(ts: TokenStream) -> Value:
    """A value: `word`, `word(args)`, `(args)`, each optionally followed by `:value`."""
    tok = ts.peek()
    if tok is None:
        ts.take("a value")
    assert tok is not None
    if tok.is_punct("("):
        val = Value("", _parse_args(ts), None, tok)
    else:
        if tok.kind == "punct":
            raise ts.error(tok, "expected a value, found '%s'" % tok.text)
        ts.i += 1
        args = None
        nxt = ts.peek()
        if nxt is not None and nxt.is_punct("("):
            args = _parse_args(ts)
        val = Value(tok.text, args, None, tok)
    nxt = ts.peek()
    if nxt is not None and nxt.is_punct(":"):
        ts.i += 1
        val.sub = parse_value(ts)
    return val


def parse_assignments(tokens: list[Token], src) -> list[Assignment]:
    """`name = value name2 = value2 flag ...` after the command word."""
    ts = TokenStream(tokens, src)
    out: list[Assignment] = []
    while ts.peek() is not None:
        name = ts.take("a parameter name")
        if name.kind == "punct":
            raise ts.error(name, "expected a parameter name, found '%s'" % name.text)
        nxt = ts.peek()
        if nxt is not None and nxt.is_punct("="):
            ts.i += 1
            out.append(Assignment(name, parse_value(ts)))
        else:
            out.append(Assignment(name, None))
    return out
