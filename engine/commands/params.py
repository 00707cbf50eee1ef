"""Typed parameters of the command table: each converts a parsed `Value` and shows its options.

Names and enumerated values resolve the MrBayes way: an exact (case-insensitive) match wins, else a
unique prefix, else an error that names the candidates.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from mbgpu.errors import CommandError

from .limits import C_INT_MAX
from .prior_checks import check_prior
from .values import Value


def resolve(word: str, candidates: Sequence[str], what: str) -> str:
    """The candidate `word` names (exact, else unique prefix; case-insensitive)."""
    low = word.lower()
    for c in candidates:
        if c.lower() == low:
            return c
    hits = [c for c in candidates if c.lower().startswith(low)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        if len(candidates) > 12:
            near = difflib.get_close_matches(word, candidates, n=3, cutoff=0.5)
            hint = ("did you mean %s?" % " or ".join(near)) if near else "'help' lists them"
            raise CommandError("unknown %s '%s' (%s)" % (what, word, hint))
        raise CommandError("unknown %s '%s' (expected one of: %s)" % (what, word, ", ".join(candidates)))
    raise CommandError("ambiguous %s '%s' (could be: %s)" % (what, word, ", ".join(hits)))


def parse_number(text: str, what: str) -> float:
    """A finite float, or the word 'infinity'."""
    if text.lower() in ("inf", "infinity"):
        return math.inf
    try:
        val = float(text)
    except ValueError:
        raise CommandError("%s: '%s' is not a number" % (what, text)) from None
    if math.isnan(val):
        raise CommandError("%s: '%s' is not a number" % (what, text))
    return val


@dataclass
class Param:
    """Base class: a named parameter with a default and a help text.

    `supported` says which values mbgpu can run: None, every value; a tuple, only those (Choice words,
    Prior heads, or 'Head:Sub' for priors with a ':' part); (), only the default; or a predicate on the
    converted value. Anything else is refused as "not supported yet" rather than accepted and ignored.
    """

    name: str
    default: Any = None
    help: str = ""
    supported: Any = field(default=None, kw_only=True)

    def unsupported(self, value: Any) -> str | None:
        """The value as written when mbgpu cannot run it yet, else None."""
        ok = self.supported
        if ok is None:
            return None
        if callable(ok):
            good = ok(value)
        elif ok == ():
            good = value == self.default
        else:
            good = any(k in ok for k in self._keys(value))
        return None if good else self.show(value)

    def _keys(self, value: Any) -> tuple:
        return (value,)

    def support_note(self) -> str:
        """What `supported` allows, in words, for help and docs/commands.md ('' when every value runs)."""
        ok = self.supported
        if ok is None:
            return ""
        if callable(ok):
            return (ok.__doc__ or "some values").strip().splitlines()[0]
        if ok == ():
            return "only the default (the rest is not supported yet)"
        return "only %s (the rest is not supported yet)" % "/".join(ok)

    def check(self, value: Any) -> None:
        """Raise CommandError when a supported value is out of range (priors: engine.commands.prior_checks)."""

    def convert(self, value: Value | None) -> Any:
        raise NotImplementedError

    def options(self) -> str:
        return ""

    def show(self, current: Any) -> str:
        return "" if current is None else str(current)

    def _need(self, value: Value | None) -> Value:
        if value is None:
            raise CommandError("%s needs a value (%s=...)" % (self.name, self.name))
        return value

    def _plain(self, value: Value | None) -> str:
        v = self._need(value)
        if v.args is not None or v.sub is not None:
            raise CommandError("%s takes a single value, not '%s'" % (self.name, v.text()))
        return v.head


@dataclass
class Choice(Param):
    """One of a fixed set of words (`rates=invgamma`); a bare flag means `yes` for Yes/No."""

    choices: tuple[str, ...] = ()

    def convert(self, value):
        if value is None and "Yes" in self.choices:
            return "Yes"
        return resolve(self._plain(value), self.choices, "value for %s" % self.name)

    def options(self):
        return "/".join(self.choices)


def YesNo(name: str, default: str, help: str = "", **kw) -> Choice:
    return Choice(name, default, help, ("Yes", "No"), **kw)


def interval(lo, hi) -> str:
    """`in [lo, hi]`, `>= lo` or `<= hi`: the closed range an option's value must lie in, for messages."""
    if lo is not None and hi is not None:
        return "in [%s, %s]" % (_show(lo), _show(hi))
    return ">= %s" % _show(lo) if lo is not None else "<= %s" % _show(hi)


def _show(x) -> str:
    return str(x) if isinstance(x, int) else "%g" % x


def _echo(text: str) -> str:
    """The value as typed, shortened when it is very long (a 5000-digit number)."""
    return text if len(text) <= 24 else text[:20] + "..."


def out_of_range(name: str, text: str, lo, hi) -> CommandError:
    """`nchains=300 is out of range: it must be in [1, 256]`."""
    return CommandError("%s=%s is out of range: it must be %s" % (name.lower(), _echo(text), interval(lo, hi)))


_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass
class Int(Param):
    """An integer in [lo, hi] (mbgpu.commands.limits); hi defaults to a C int's largest value, as MrBayes
    reads every integer option into one, so no value can overflow later."""

    lo: int | None = None
    hi: int | None = C_INT_MAX

    def convert(self, value):
        text = self._plain(value)
        if not _INTEGER.fullmatch(text):
            raise CommandError("%s=%s: it must be an integer" % (self.name.lower(), _echo(text)))
        hi = C_INT_MAX if self.hi is None else self.hi
        if len(text.lstrip("+-0")) > len(str(hi)):        # too many digits to be in range (or for int())
            raise out_of_range(self.name, text, self.lo, hi)
        val = int(text)
        if (self.lo is not None and val < self.lo) or val > hi:
            raise out_of_range(self.name, text, self.lo, hi)
        return val

    def options(self):
        return "<integer %s>" % interval(self.lo, C_INT_MAX if self.hi is None else self.hi)


@dataclass
class Float(Param):
    """A finite real number with optional bounds (inclusive): inf and nan are refused."""

    lo: float | None = None
    hi: float | None = None

    def convert(self, value):
        text = self._plain(value)
        val = parse_number(text, self.name)
        if not math.isfinite(val):
            raise CommandError("%s=%s: it must be a finite number" % (self.name.lower(), _echo(text)))
        if (self.lo is not None and val < self.lo) or (self.hi is not None and val > self.hi):
            raise out_of_range(self.name, text, self.lo, self.hi)
        return val

    def options(self):
        if self.lo is None and self.hi is None:
            return "<number>"
        return "<number %s>" % interval(self.lo, self.hi)

    def show(self, current):
        return "%f" % current if isinstance(current, float) else str(current)


@dataclass
class Text(Param):
    """A name or file name (quoted or not)."""

    def convert(self, value):
        return self._plain(value)

    def options(self):
        return "<name>"


@dataclass
class Numbers(Param):
    """A parenthesised list of numbers: `ratemultiplier=(1.5,0.9)`, `reweight=(10,5)`."""

    def convert(self, value):
        v = self._need(value)
        items = v.args if v.args is not None else [v.head]
        if v.args is not None and v.head:
            raise CommandError("%s expects (x,y,...), not '%s'" % (self.name, v.text()))
        out = tuple(parse_number(a, self.name) for a in items)
        if not all(math.isfinite(x) for x in out):
            raise CommandError("%s=%s: every value must be a finite number" % (self.name.lower(), v.text()))
        return out

    def options(self):
        return "(<number>,...)"


@dataclass
class WeightScheme(Numbers):
    """mcmc's `reweight=(down,up)` or `(down,up,increment)`, with MrBayes 3.2.7a's checks (DoMcmcParm)."""

    def convert(self, value):
        out = super().convert(value)
        if len(out) not in (2, 3):
            raise CommandError("Reweight expects (down,up) or (down,up,increment), not %d numbers" % len(out))
        if not all(0.0 <= x <= 100.0 for x in out[:2]):
            raise CommandError("The reweighting parameter must be between 0 and 100")
        if out[0] + out[1] > 100.0:
            raise CommandError("The sum of the reweighting parameters cannot exceed 100 %")
        if len(out) == 3 and not 0.0 < out[2] <= 1.0:
            raise CommandError("The reweighting increment must be between 0 and 1")
        if out[0] >= 100.0:
            raise CommandError("Cannot decrease weight of all characters")
        return out


@dataclass
class Divisions(Param):
    """`applyto=(all)` or `(1,2,3)`: 'all' or a tuple of 1-based division numbers."""

    def convert(self, value):
        v = self._need(value)
        items = v.args if v.args is not None else [v.head]
        if len(items) == 1 and items[0].lower() == "all":
            return "all"
        out = []
        for a in items:
            if not a.isdigit() or int(a) < 1:
                raise CommandError("%s: '%s' is not a division number (1, 2, ... or all)" % (self.name, a))
            out.append(int(a))
        return tuple(out)

    def options(self):
        return "(all)/(<number>,...)"

    def show(self, current):
        return "(all)" if current == "all" else "(%s)" % ",".join(map(str, current or ()))


@dataclass(frozen=True)
class PriorValue:
    """A distribution or fixed value: `kind` is the canonical head, args numbers or names."""

    kind: str
    args: tuple = ()
    sub: "PriorValue | None" = None

    def __str__(self) -> str:
        def fmt(a):
            return ("%g" % a) if isinstance(a, float) else str(a)
        out = self.kind + ("(%s)" % ",".join(fmt(a) for a in self.args) if self.args else "")
        return out + (":" + str(self.sub) if self.sub is not None else "")


def parse_prior_text(text: str) -> PriorValue:
    """`Unconstrained:GammaDir(1,0.1,1,1)` -> PriorValue (table defaults; `...` entries are dropped)."""
    head, _, rest = text.partition(":")
    name, _, args = head.partition("(")
    values = []
    for a in args.rstrip(")").split(",") if args else []:
        if a and a != "...":
            try:
                values.append(parse_number(a, name))
            except CommandError:
                values.append(a)
    return PriorValue(name, tuple(values), parse_prior_text(rest) if rest else None)


@dataclass
class Prior(Param):
    """A prior: `head(args)` with head from `heads`; `subs` lists the allowed heads after a ':'."""

    heads: tuple[str, ...] = ()
    subs: dict = field(default_factory=dict)
    named: bool = False  # args may be words (fixed(wag), fixed(equal), fixed(treename))
    words: dict = field(default_factory=dict)  # kind -> the words its args must name (checked here)

    def __post_init__(self) -> None:
        if isinstance(self.default, str):
            self.default = parse_prior_text(self.default)

    def convert(self, value):
        return self._convert(self._need(value), self.heads, self.subs)

    def check(self, value):
        check_prior(self.name, value)

    def _convert(self, v: Value, heads, subs) -> PriorValue:
        if not v.head:
            raise CommandError("%s needs a distribution name before '('" % self.name)
        kind = resolve(v.head, heads, "value for %s" % self.name)
        args = tuple(self._arg(a) for a in (v.args or ()))
        if kind in self.words:       # e.g. aamodelpr=fixed(wa): an unknown or ambiguous name is an error here
            args = tuple(resolve(a, self.words[kind], "%s=%s name" % (self.name, kind)) if isinstance(a, str)
                         else a for a in args)
        sub = None
        if v.sub is not None:
            allowed = subs.get(kind)
            if not allowed:
                raise CommandError("%s=%s takes no ':' part" % (self.name, kind))
            sub = self._convert(v.sub, allowed, {})
        elif subs.get(kind):
            raise CommandError("%s=%s needs a ':' part (%s)" % (self.name, kind, "/".join(subs[kind])))
        return PriorValue(kind, args, sub)

    def _keys(self, value):
        sub = getattr(value, "sub", None)
        return (value.kind,) if sub is None else (value.kind, "%s:%s" % (value.kind, sub.kind))

    def _arg(self, text: str):
        try:
            return parse_number(text, self.name)
        except CommandError:
            if self.named:
                return text
            raise

    def options(self):
        return "/".join(self.heads)

    def show(self, current):
        return str(current)
