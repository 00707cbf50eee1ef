"""A failed write to an output file (disk full, quota, file size limit, I/O error) as one typed error.

The message names the file, what was being written, the system's words for the errno and, where it can
be known, the free space or the size limit; the run driver then adds what the last checkpoint allows
(`after_checkpoint`). The CLI prints it as one line and exits with status 2.
"""
from __future__ import annotations

import errno as errnos
import os
import resource

from mbgpu.errors import Location, OutputError


class OutputWriteFailed(OutputError):
    """Writing `path` failed with an OSError; nothing after the last whole line (or checkpoint) was kept."""

    def __init__(self, path: str, what: str, exc: OSError, needed: int | None = None):
        self.path, self.what, self.errno = path, what, exc.errno
        super().__init__("writing %s failed: %s" % (what, describe(exc, path, needed)), Location(path))

    def after_checkpoint(self, generation: int | None, checkpoint: str) -> "OutputWriteFailed":
        """The same error, its message ending with what a rerun can continue from (None: no checkpoint)."""
        if generation is None:
            tail = "no checkpoint was written yet, so the run must start again (mcmc append=no)"
        else:
            tail = ("the last checkpoint (generation %d, '%s') is intact; run again with mcmc append=yes to continue"
                    % (generation, checkpoint))
        self.message = "%s; %s" % (self.message, tail)
        self.args = (self.message,)
        return self


def describe(exc: OSError, path: str, needed: int | None = None) -> str:
    """`File too large (EFBIG; the file size limit, ulimit -f, is 61440 bytes)`: errno text and limits."""
    code = exc.errno or 0
    text = exc.strerror or str(exc) or "input/output error"
    name = errnos.errorcode.get(code, "errno %d" % code)
    notes = [name] + [n for n in (_need(needed), _limit(code, path)) if n]
    return "%s (%s)" % (text, "; ".join(notes))


def _need(needed: int | None) -> str:
    return "" if needed is None else "it needs %d bytes" % needed


def _limit(code: int, path: str) -> str:
    """The limit that explains `code` where it can be read: free space (ENOSPC/EDQUOT) or the file size
    limit (EFBIG); '' where it cannot."""
    if code == errnos.EFBIG:
        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
        if soft != resource.RLIM_INFINITY:
            return "the file size limit, ulimit -f, is %d bytes" % soft
        return ""
    if code in (errnos.ENOSPC, getattr(errnos, "EDQUOT", -1)):
        try:
            st = os.statvfs(os.path.dirname(os.path.abspath(path)))
        except OSError:
            return ""
        free = st.f_bavail * st.f_frsize
        extra = "" if code == errnos.ENOSPC else " (a disk quota may be lower)"
        return "%d bytes free on that file system%s" % (free, extra)
    return ""


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte of `data` is written (a short write is retried; the next one raises)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def write_text_whole(path: str, text: str, what: str) -> None:
    """Write `text` to `path` through `path.tmp` and a rename, so a failed write (OutputWriteFailed) leaves
    the file as it was and no partial copy (sump's and sumt's summary files)."""
    data = text.encode("utf-8")
    tmp = path + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as exc:
        raise OutputWriteFailed(path, what, exc, len(data)) from None
    try:
        try:
            write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise OutputWriteFailed(path, what, exc, len(data)) from None
