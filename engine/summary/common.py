"""Settings shared by sump and sumt: file stems, burn-in, number formats (`set precision/scientific`)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from mbgpu.errors import InputFileError, Location


@dataclass(frozen=True)
class Burnin:
    """MrBayes' burn-in rule: a fraction of the sampled rows (gen 0 included) or a fixed count."""

    relative: bool
    fraction: float
    count: int

    def discard(self, n_rows: int) -> int:
        """Rows to drop from a file of `n_rows` samples (`(int)(fraction*n)` like MrBayes)."""
        return int(self.fraction * n_rows) if self.relative else self.count

    def describe(self, what: str) -> str:
        if self.relative:
            return "Using relative burnin ('relburnin=yes'), discarding the first %.0f %% of %s" % (
                self.fraction * 100.0, what)
        return "Using absolute burnin ('relburnin=no'), discarding the first %d %s" % (self.count, what)


def burnin_of(params: dict) -> Burnin:
    return Burnin(str(params.get("Relburnin", "Yes")).lower().startswith("y"),
                  float(params.get("Burninfrac", 0.25)), int(params.get("Burnin", 0)))


def session_stamp(settings) -> str:
    """The `[ID: ...]` of summary files: the stamp of this session's last mcmc, none after no mcmc
    (MrBayes writes its own run's stamp, not the files', and nothing in a session without a run)."""
    return str(getattr(settings, "stamp", "") or "")


def number_format(settings) -> tuple[bool, int]:
    """(scientific, precision) from `set`, MrBayes' defaults when unset."""
    opts = getattr(settings, "options", None) or {}
    sci = str(opts.get("Scientific", "Yes")).lower().startswith("y")
    return sci, int(opts.get("Precision", 6))


def c_special(x: float) -> str:
    """How C's printf spells a non-finite double: `-nan` when the sign bit is set (0.0/0.0 on x86, e.g.
    the ESS of a run where a parameter is constant), else `nan`, `inf`, `-inf`."""
    if math.isnan(x):
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "inf" if x > 0 else "-inf"


def c_fixed(x: float, width: int, precision: int) -> str:
    """C's `%{width}.{precision}f`, non-finite values included (`    -nan`)."""
    return "%*.*f" % (width, precision, x) if math.isfinite(x) else "%*s" % (width, c_special(x))


def mb_num(x: float, scientific: bool, precision: int) -> str:
    """MrBayes' MbPrintNum: `%.{p}e` or `%.{p}f` (C's nan/inf spelling)."""
    if not math.isfinite(x):
        return c_special(x)
    return "%.*e" % (precision, x) if scientific else "%.*f" % (precision, x)


def file_stem(settings, params: dict) -> str:
    """The `Filename` parameter, else mcmc's Filename, else the data file's name (like analysis.py)."""
    name = params.get("Filename") or ""
    if not name:
        mcmc = getattr(settings, "mcmc", None) or {}
        name = mcmc.get("Filename") or os.path.basename(getattr(settings, "data_file", "") or "")
    if not name:
        raise InputFileError("no file name: give sump/sumt filename=... or execute a data file first")
    opts = getattr(settings, "options", None) or {}
    folder = opts.get("Dir") or ""
    return os.path.join(folder, name) if folder and not os.path.isabs(name) else name


def output_stem(settings, params: dict, stem: str) -> str:
    out = params.get("Outputname") or ""
    return out if out else stem


def run_files(stem: str, nruns: int, ext: str) -> list[str]:
    """`stem.ext` for one run, `stem.run<k>.ext` for several (MrBayes' naming)."""
    if nruns == 1:
        return ["%s.%s" % (stem, ext)]
    return ["%s.run%d.%s" % (stem, k + 1, ext) for k in range(nruns)]


def check_exists(path: str) -> None:
    if not os.path.exists(path):
        raise InputFileError("file not found (make sure that 'Nruns' and 'Filename' are set correctly)",
                             Location(path))


def emit(console, text: str) -> None:
    """Print MrBayes-style text (with embedded newlines) line by line through the console."""
    if text.endswith("\n"):
        text = text[:-1]
    for line in text.split("\n"):
        console.print(line)


def mb_quicksort(items: list, left: int, right: int, key) -> None:
    """MrBayes' SortPartCtr/SortTreeCtr: Hoare quicksort, descending by key (ties unstable)."""
    i, j = left, right
    x = key(items[(left + right) // 2])
    while True:
        while key(items[i]) > x and i < right:
            i += 1
        while x > key(items[j]) and j > left:
            j -= 1
        if i <= j:
            items[i], items[j] = items[j], items[i]
            i += 1
            j -= 1
        if i > j:
            break
    if left < j:
        mb_quicksort(items, left, j, key)
    if i < right:
        mb_quicksort(items, i, right, key)
