"""Exclusive ownership of an output prefix for the length of one `mcmc` run: the file PREFIX.lock.

The lock file is created atomically (O_CREAT|O_EXCL, also atomic on NFS v3 and later) and holds one
JSON line: program, host, pid and start time. A second run on the same prefix stops at once with
`OutputInUse`, before it opens or truncates any file. A lock left by a run that died (same host, its
pid gone) is taken over with a one-line warning; a lock from another host is never taken over, since
its pid cannot be checked from here. Two runs that find the same stale lock at once cannot both take
it over: the stale file is moved aside and checked to be the one that was read before it is deleted.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass

from mbgpu.errors import Location, OutputError

SUFFIX = ".lock"
PROGRAM = "mbgpu"
ATTEMPTS = 3


class OutputInUse(OutputError):
    """Another run (live, or on another host) owns the output prefix; nothing was opened or written."""


@dataclass(frozen=True)
class LockOwner:
    """Who holds a lock: the program, its host name and pid, and when it started (local time)."""

    host: str
    pid: int
    since: str
    program: str = PROGRAM

    @classmethod
    def me(cls) -> "LockOwner":
        return cls(socket.gethostname(), os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S"))

    def text(self) -> str:
        return json.dumps({"program": self.program, "host": self.host, "pid": self.pid, "since": self.since}) + "\n"

    @classmethod
    def parse(cls, text: str) -> "LockOwner | None":
        """The owner a lock file names; None when the text is not a lock (empty, damaged, foreign)."""
        try:
            d = json.loads(text)
            return cls(str(d["host"]), int(d["pid"]), str(d["since"]), str(d.get("program", PROGRAM)))
        except (ValueError, KeyError, TypeError):
            return None

    def is_stale(self) -> bool:
        """True when the owner ran on this host and its process is gone."""
        return self.host == socket.gethostname() and not pid_alive(self.pid)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (one owned by another user counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_path(prefix: str) -> str:
    return prefix + SUFFIX


class OutputLock:
    """A held lock on an output prefix; a context manager that releases it on exit, however the run ends.

    >>> import tempfile, os.path
    >>> prefix = os.path.join(tempfile.mkdtemp(), "r")
    >>> with OutputLock.acquire(prefix, warn=print) as lock:
    ...     os.path.exists(prefix + ".lock")
    True
    >>> os.path.exists(prefix + ".lock")
    False
    """

    def __init__(self, prefix: str, owner: LockOwner):
        self.prefix, self.path, self.owner = prefix, lock_path(prefix), owner

    @classmethod
    def acquire(cls, prefix: str, warn) -> "OutputLock":
        """Take the lock on `prefix`; `warn(line)` reports a stale lock taken over. Raises OutputInUse."""
        me, path = LockOwner.me(), lock_path(prefix)
        for _ in range(ATTEMPTS):
            if _create(path, me.text()):
                return cls(prefix, me)
            held, text = _read(path)
            if held is None and text is None:
                continue                      # released meanwhile: try again
            if held is None or not held.is_stale():
                raise in_use(prefix, held)
            if _remove_stale(path, text):
                warn("   Warning: taking over the stale lock %s of %s (pid %d on host %s, since %s; that process "
                     "is gone)" % (path, held.program, held.pid, held.host, held.since))
        raise in_use(prefix, _read(path)[0])

    def release(self) -> None:
        """Remove the lock file if it is still ours (never another run's)."""
        held, _ = _read(self.path)
        if held == self.owner:
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass

    def __enter__(self) -> "OutputLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def in_use(prefix: str, held: LockOwner | None) -> OutputInUse:
    """The one-line error for a prefix owned by `held` (None: a lock file that names no owner)."""
    path = lock_path(prefix)
    if held is None:
        return OutputInUse("output prefix '%s' is locked by a file that names no mbgpu run; if no run uses "
                           "this prefix, remove %s, or choose another mcmc filename=" % (prefix, path), Location(path))
    where = "pid %d on host %s, since %s" % (held.pid, held.host, held.since[:16])
    other = "" if held.host == socket.gethostname() else \
        " (it runs on another host: if it is gone, remove %s)" % path
    return OutputInUse("output prefix '%s' is in use by %s (%s); wait for it or choose another mcmc filename=%s"
                       % (prefix, held.program, where, other), Location(path))


def _create(path: str, text: str) -> bool:
    """Create `path` holding `text` if it does not exist; False if it does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    except OSError as exc:
        raise OutputError("cannot create the lock file '%s': %s" % (path, exc.strerror), Location(path)) from None
    try:
        os.write(fd, text.encode("utf-8"))
    except OSError as exc:
        os.close(fd)
        os.remove(path)
        raise OutputError("cannot write the lock file '%s': %s" % (path, exc.strerror), Location(path)) from None
    os.close(fd)
    return True


def _read(path: str) -> tuple[LockOwner | None, str | None]:
    """(owner, text) of the lock file; (None, None) when there is none."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None, None
    return LockOwner.parse(text), text


def _remove_stale(path: str, text: str) -> bool:
    """Remove the lock file if it still holds `text`: move it aside under a name of our own, check it, and
    put it back (without replacing a newer lock) if another run took it over in between."""
    aside = "%s.stale-%d" % (path, os.getpid())
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    _, moved = _read(aside)
    if moved == text:
        os.remove(aside)
        return True
    try:
        os.link(aside, path)          # a live lock moved by mistake: back, unless a new one exists
    except OSError:
        pass
    os.remove(aside)
    return False
