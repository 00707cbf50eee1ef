"""An output text file written in whole lines only: what the `.p`, `.t` and `.mcmc` writers write to.

`write` collects text; `flush` writes every complete line collected with plain os.write calls. When a
write fails (disk full, quota, `ulimit -f`, I/O error) the file is cut back to the end of the last
line known to be whole and `OutputWriteFailed` is raised, so a sample file never holds half a line.
"""
from __future__ import annotations

import os

from mbgpu.output.write_failure import OutputWriteFailed, write_all


class LineFile:
    """A text stream (write/flush/close/fileno/name) over a file descriptor that writes whole lines."""

    def __init__(self, path: str, what: str, *, append: bool = False):
        """Open `path` (truncated, or for appending); `what` names the contents in error messages."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if append else os.O_TRUNC)
        try:
            self.fd = os.open(path, flags, 0o666)
        except OSError as exc:
            raise OutputWriteFailed(path, what, exc) from None
        self.name, self.what = path, what
        self.size = os.fstat(self.fd).st_size   # bytes on disk, ending at a line end
        self.pending: list[str] = []
        self.failed = False

    def write(self, text: str) -> None:
        self.pending.append(text)

    def flush(self) -> None:
        """Write every complete line collected so far (a trailing partial line stays collected)."""
        if not self.pending or self.failed:
            return
        text = "".join(self.pending)
        cut = text.rfind("\n") + 1
        self.pending = [text[cut:]] if cut < len(text) else []
        if cut:
            self._write(text[:cut].encode("ascii"))

    def _write(self, data: bytes) -> None:
        try:
            write_all(self.fd, data)
        except OSError as exc:
            self._fail(exc, len(data))
        self.size += len(data)

    def _fail(self, exc: OSError, needed: int) -> None:
        """Cut the file back to its last whole line, then raise the typed error."""
        self.failed, self.pending = True, []
        try:
            os.ftruncate(self.fd, self.size)
        except OSError:
            pass   # the error below is what the user needs; a rerun truncates to the checkpoint anyway
        raise OutputWriteFailed(self.name, self.what, exc, needed) from None

    def sync(self) -> None:
        """Flush, then fsync (a network file system may report a full disk only here)."""
        self.flush()
        if self.failed:
            return
        try:
            os.fsync(self.fd)
        except OSError as exc:
            self._fail(exc, 0)

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        """Flush and close; after a failed write, only close (what follows is not written)."""
        if self.fd < 0:
            return
        try:
            self.flush()
        finally:
            os.close(self.fd)
            self.fd = -1
