"""`sump` and `sumt`: summaries of .p and .t files, written exactly as MrBayes 3.2.7a writes them.

They read MrBayes' own files as well as ours. Entry points: `run_sump(settings, console)` and
`run_sumt(settings, console)`.
"""
from mbgpu.summary.sump import run_sump
from mbgpu.summary.sumt import run_sumt

__all__ = ["run_sump", "run_sumt"]
