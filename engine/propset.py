"""MrBayes' `propset NAME$PARAM[(run,chain)]=VALUE ...`: a move's relative weight (`prob`) or start tuning.

The settings are plain data (`MoveSetting`) kept in `Settings.propset`; `checked` reads them from a
command against the moves the current model has, and `apply` gives one chain's move copies their values
(mbgpu.sampler.setup.build_runs and the move list printed at mcmc start). A move whose weight is 0 leaves
the chain's move list, as in MrBayes (its line, its .mcmc columns). MrBayes keeps the values per run and
chain: a new nruns or a command that rebuilds its moves (`RESET_BY`) drops them all, a new nchains keeps
those of the chains that remain (`resized`), and chains added later start from the defaults.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from mbgpu.errors import CommandError, NotImplementedYet

#: MrBayes 3.2.7a's range of each parameter, by move kind (param moves' `kind`, tree moves' class name)
#: and parameter name; bounds included (measured with mb-double's "The value is out of range" message)
PROB_RANGE = (0.0, 1000.0)
RANGES = {
    ("dirichlet", "alpha"): (0.001, 10000.0), ("slider", "delta"): (0.00001, 1.0),
    ("pinvar_slider", "delta"): (0.001, 0.999), ("multiplier", "lambda"): (0.0001, 10.0),
    ("ExtSPR", "p_ext"): (0.00001, 0.99999), ("ExtSPR", "lambda"): (0.00001, 100.0),
    ("ExtTBR", "p_ext"): (0.00001, 0.99999), ("ExtTBR", "lambda"): (0.00001, 100.0),
    ("ParsSPR", "warp"): (0.0, 1.0), ("ParsSPR", "r"): (0.0, 0.3), ("ParsSPR", "v_t"): (0.0001, 0.5),
    ("ParsSPR", "lambda"): (-13.815511, 13.815511), ("Multiplier", "lambda"): (0.0001, 20.0),
    ("NodeSlider", "lambda"): (0.00001, 100.0), ("TreeLengthMultiplier", "lambda"): (0.0001, 100.0),
}
#: commands after which MrBayes 3.2.7a runs with its default moves again (set: its beagle options and
#: partition); checked one by one with mb-double
RESET_BY = ("Lset", "Prset", "Exclude", "Include", "Delete", "Restore", "Report", "Link", "Unlink")
RESET_BY_SET = ("Partition", "Usebeagle", "Beagleresource", "Beagledevice", "Beagleprecision", "Beaglescaling",
                "Beaglesse", "Beaglethreads", "Beaglethreadcount", "Beaglefloattips")


@dataclass(frozen=True)
class MoveSetting:
    """One `NAME$PARAM[(run,chain)]=VALUE`: the move's name and the parameter in lower case (MrBayes
    compares them so), the value, the 0-based run and chain (None: every run and chain), and `below`: the
    chains it reaches are those below this index (the chains there were when it was set)."""

    move: str
    param: str
    value: float
    run: int | None
    chain: int | None
    below: int

    def applies_to(self, run: int, chain: int) -> bool:
        return (self.run is None or (self.run == run and self.chain == chain)) and chain < self.below


def resized(settings: list, name: str, old, new) -> list:
    """The settings left after mcmc/mcmcp/ss/ssp set option `name` (Nruns, Nchains) from `old` to `new`, as
    MrBayes 3.2.7a keeps them (mb-double, tests/test_commands/test_propset.py)."""
    if name not in ("Nruns", "Nchains") or old == new:
        return settings
    if name == "Nruns":
        return []
    return [dataclasses.replace(st, below=min(st.below, new)) for st in settings if st.chain is None or st.chain < new]


def tuning_names(mv) -> tuple[str, ...]:
    """The tuning parameters of a chain's move (a ParamMove, a TreeMoveSlot or a clock move's
    mbgpu.clock.move_table.ClockMoveSpec), as propset names them."""
    if hasattr(mv, "ranges"):
        return tuple(mv.tuning)
    inner = getattr(mv, "move", None)
    return (mv.tuning_name,) if inner is None else tuple(inner.tuning)


def tuning_range(mv, param: str) -> tuple[float, float]:
    """MrBayes' range of a move's tuning parameter: a clock move carries its own (`ranges`)."""
    return mv.ranges[param] if hasattr(mv, "ranges") else RANGES[(move_kind(mv), param)]


def move_kind(mv) -> str:
    inner = getattr(mv, "move", None)
    return mv.kind if inner is None else type(inner).__name__


def apply(moves: list, settings, run: int, chain: int) -> list:
    """Chain (run, chain)'s moves with the propset values set on them (in place), less those of weight 0."""
    by_name = {mv.name.lower(): mv for mv in moves}
    for st in settings:
        mv = by_name.get(st.move)
        if mv is None or not st.applies_to(run, chain):
            continue
        inner = getattr(mv, "move", None)
        if st.param == "prob":
            mv.weight = st.value
        elif inner is None:
            mv.tuning = st.value
        else:
            inner.tuning[st.param] = st.value
    return [mv for mv in moves if mv.weight > 0]


def check_runnable(settings: list, nchains: int) -> None:
    """Refuse what MrBayes would run with a move list that differs between chains: a `prob` set before
    nchains grew (MrBayes prints one list per chain then; mbgpu's chains share one move list)."""
    if any(st.param == "prob" and st.below < nchains for st in settings):
        raise NotImplementedYet("propset $prob followed by a larger nchains (chains with different move lists) "
                                "is not supported yet")


def checked(cmd, moves: list, nruns: int, nchains: int) -> list[MoveSetting]:
    """The settings of a `propset` command (`cmd`, a parsed Command) against the current model's move list
    `moves`; a name, parameter, index or value MrBayes refuses raises its message at its token."""
    words = cmd.tokens[1:]
    out, i = [], 0
    by_name = {mv.name.lower(): mv for mv in moves}
    while i < len(words):
        start = words[i]
        name = ""
        while i < len(words) and not (words[i].kind == "word" and words[i].text.startswith("$")):
            if words[i].is_punct("="):
                raise cmd.error("expected '$' and a parameter name after the move name", words[i], CommandError)
            name += words[i].text
            i += 1
        if i == len(words):
            raise cmd.error("expected '$PARAMETER=VALUE' after move '%s'" % name, start, CommandError)
        mv = by_name.get(name.lower())
        if mv is None:
            raise cmd.error("Could not find move '%s'" % name.lower(), start, CommandError)
        ptok = words[i]
        param = ptok.text[1:].lower()
        if param == "targetrate":
            raise cmd.error("propset $targetrate is not supported yet", ptok, NotImplementedYet)
        if param != "prob" and param not in tuning_names(mv):
            raise cmd.error("Could not find move parameter to change '%s'" % ptok.text[1:], ptok, CommandError)
        run, chain, i = _indices(cmd, words, i + 1, nruns, nchains)
        if run is not None and param == "prob":
            raise cmd.error("propset $prob for one run and chain is not supported yet", ptok, NotImplementedYet)
        value, i = _value(cmd, words, i, PROB_RANGE if param == "prob" else tuning_range(mv, param))
        if param == "prob" and value > 0 and not getattr(mv, "has_kernel", True):
            raise cmd.error("move %s is not implemented yet" % mv.name, start, NotImplementedYet)
        out.append(MoveSetting(name.lower(), param, value, run, chain, nchains))
    return out


def _indices(cmd, words, i: int, nruns: int, nchains: int):
    """The optional `(run,chain)` after a parameter: (0-based run, chain, next index), or (None, None, i)."""
    if i >= len(words) or not words[i].is_punct("("):
        return None, None, i
    got = []
    for k, (what, top) in enumerate((("Run", nruns), ("Chain", nchains))):
        tok = words[i + 1 + 2 * k] if i + 1 + 2 * k < len(words) else words[-1]
        if not tok.text.isdigit():
            raise cmd.error("expected '(run,chain)', found '%s'" % tok.text, tok, CommandError)
        if not 1 <= int(tok.text) <= top:
            raise cmd.error("%s index is out of range (min=1; max=%d)" % (what, top), tok, CommandError)
        got.append(int(tok.text) - 1)
        sep = words[i + 2 + 2 * k] if i + 2 + 2 * k < len(words) else words[-1]
        if not sep.is_punct("," if k == 0 else ")"):
            raise cmd.error("expected '(run,chain)', found '%s'" % sep.text, sep, CommandError)
    return got[0], got[1], i + 5


def _value(cmd, words, i: int, bounds: tuple[float, float]) -> tuple[float, int]:
    """The `=VALUE` at words[i]: (value, next index); MrBayes' range message when outside `bounds`."""
    if i >= len(words) or not words[i].is_punct("="):
        tok = words[min(i, len(words) - 1)]
        raise cmd.error("expected '=' and a value, found '%s'" % tok.text, tok, CommandError)
    tok = words[i + 1] if i + 1 < len(words) else words[i]
    first, is_number = _mrbayes_token(tok.text) if tok.kind == "word" and tok is not words[i] else (tok.text, False)
    if not is_number:
        raise cmd.error("Expecting '<number>', found '%s'" % first, tok, CommandError)
    if first != tok.text:
        raise cmd.error("Expecting '<number>', found '%s'" % tok.text, tok, CommandError)
    prefix = _STRTOD.match(first).group(0)
    if not any(c.isdigit() for c in prefix.lower().partition("e")[0]):
        raise cmd.error("propset value '%s' (no number for C's sscanf) is not supported" % first, tok,
                        NotImplementedYet)
    value = float(prefix)
    lo, hi = bounds
    if not lo <= value <= hi:
        raise cmd.error("The value is out of range (min = %f; max = %f)" % (lo, hi), tok, CommandError)
    return value, i + 2


#: C's sscanf("%lf") reads the longest numeric prefix of MrBayes' NUMBER token ("2.5.1" is 2.5, "1e" is 1)
_STRTOD = re.compile(r"[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?")


def _mrbayes_token(text: str) -> tuple[str, bool]:
    """The first token MrBayes' GetToken reads from `text`, and whether it is a NUMBER. A word goes on over
    letters, digits, '_', '.', '+', '-' and is a NUMBER while it is digits and dots with one exponent E that
    a sign may follow; a '-' ends a NUMBER except after its E. Any other first character is a token of its
    own, so '-1' starts with the token '-' (MrBayes reads no signed numbers in propset)."""
    if not (text[0].isalnum() or text[0] in "_."):
        return text[0], False
    number, exponent, n = text[0] in "0123456789.", False, 1
    while n < len(text) and (text[n].isalnum() or text[n] in "_.+-"):
        c, before = text[n], text[n - 1]
        if number and c == "-" and before not in "Ee":
            break
        if number and c in "Ee" and not exponent:
            exponent = True
        elif not (number and c in "+-" and before in "Ee") and c not in "0123456789.":
            number = False
        n += 1
    return text[:n], number
