"""MrBayes' question before an `mcmc` overwrites the sample files of an earlier run.

MrBayes 3.2.7a (PreparePrintFiles) asks it only with `set nowarnings=no` (its default) and only in
interactive mode; `mb FILE` sets nowarnings=yes and overwrites. mbgpu asks where its session has a
terminal to ask at (`Interpreter.ask`, set by mbgpu.session for `mbgpu -i` and the bare prompt); in
batch mode `ask` is None and the files are overwritten, as MrBayes does.
"""
from __future__ import annotations

import os

from mbgpu.errors import OutputError

IND = "   "


def earlier_results(stem: str, nruns: int) -> list[str]:
    """The `.p` and `.t` files of `nruns` runs named `stem` that exist already (what MrBayes looks for)."""
    from mbgpu.sampler.sink import output_paths

    return [p for p in output_paths(stem, nruns) if not p.endswith(".mcmc") and os.path.exists(p)]


def confirm_overwrite(settings, stem: str, nruns: int, ask, console) -> None:
    """Ask before overwriting earlier results (see the module docstring); a yes sets nowarnings=yes and
    autoreplace=yes as MrBayes does, a no raises OutputError before any file is touched."""
    o = settings.options
    if ask is None or o.get("Nowarnings", "No") == "Yes" or settings.mcmc.get("Append", "No") == "Yes":
        return
    if not earlier_results(stem, nruns):
        return
    console.print("")
    console.print("%sThere are results from a previous run saved using the same filename(s)." % IND)
    if ask("Do you want to overwrite these results"):
        console.print("")
        o["Nowarnings"], o["Autoreplace"] = "Yes", "Yes"
        return
    console.print("")
    raise OutputError("mcmc stopped: the files of a previous run with the prefix '%s' were kept; specify a "
                      "different file name with mcmc filename=<name>, or move or rename the old result files"
                      % stem)
