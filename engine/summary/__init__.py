"""`sump` and `sumt`: summaries of .p and .t files, written exactly as MrBayes 3.2.7a writes them.

They read MrBayes' own files as well as ours. Entry points: `run_sump(settings, console)` and
`run_sumt(settings, console)`.
"""
from engine.summary.sump import run_sump
from engine.summary.sumt import run_sumt

__all__ = ["run_sump", "run_sumt"]
