"""Stopping a run cleanly on SIGTERM, SIGINT or SIGUSR1 (what SLURM sends before the time limit).

While a run is in progress the handlers only record the signal; the loop then writes a checkpoint at
the end of the current generation, stops, prints the summary, and the process exits with status
128 + signal number (143 SIGTERM, 130 SIGINT, 138 SIGUSR1) so job scripts can tell it from a finished
run. The previous handlers are put back when the run ends. A second SIGINT interrupts at once.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGINT", "SIGUSR1") if hasattr(signal, n))


class StopFlag:
    """The first stop signal received during a run (None: none)."""

    def __init__(self):
        self.signum: int | None = None

    def handler(self, signum, frame) -> None:  # noqa: ARG002 (signal handler signature)
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum is not None else ""


class RunStopped(SystemExit):
    """Raised after a signal-stopped run has written its checkpoint and summary; exit status 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


@contextmanager
def stop_on_signals(flag: StopFlag):
    """Install the recording handlers for the duration of the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return
    old = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    for s in STOP_SIGNALS:
        signal.signal(s, flag.handler)
    try:
        yield flag
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def exit_on_stop_signals():
    """Around a whole `mcmc` command: SIGTERM or SIGUSR1 outside the run loop (while the chains are built
    or compiled) raise RunStopped instead of killing the process, so `finally` blocks still run (the
    output lock is removed). SIGINT already raises KeyboardInterrupt. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):  # noqa: ARG001 (signal handler signature)
        raise RunStopped(signum)

    old = {s: signal.getsignal(s) for s in STOP_SIGNALS if s != signal.SIGINT}
    for s in old:
        signal.signal(s, stop)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
