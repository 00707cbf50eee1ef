"""Typed errors a user can cause; the CLI turns each into one line `file:line:col: error: ...`.

Bugs are assertions, not these. Every error carries where it happened when that is known, so the
message points at the file, line and column of the user's input.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A position in an input file (1-based line and column)."""

    file: str = "<input>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return "%s:%d:%d" % (self.file, self.line, self.col)


class Quit(Exception):
    """`quit` was executed: stop reading commands. Control flow, not an error (no MbgpuError)."""


class MbgpuError(Exception):
    """Base class of every error caused by user input or the user's environment."""

    def __init__(self, message: str, where: Location | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def one_line(self) -> str:
        """The message as the CLI prints it: `file:line:col: error: message` on one line."""
        text = " ".join(self.message.split())
        if self.where is None:
            return "mbgpu: error: %s" % text
        return "%s: error: %s" % (self.where, text)


class NexusError(MbgpuError):
    """Malformed NEXUS text: tokens, blocks, matrices."""


class CommandError(MbgpuError):
    """A command or parameter of the MrBayes command language that cannot be accepted."""


class DataError(MbgpuError):
    """Character data inconsistent with its declaration (ntax, nchar, symbols, taxa)."""


class ModelError(MbgpuError):
    """A model or prior setting that cannot be built for the data at hand."""


class InputFileError(MbgpuError):
    """A missing or unreadable input file (FASTA, HMM, PDBQT, grid parameter file ...)."""


class DeviceError(MbgpuError):
    """No usable GPU, not enough device memory, or a kernel that could not be built."""


class NotImplementedYet(CommandError):
    """A recognised command or option whose implementation has not landed yet."""


class OutputError(MbgpuError):
    """An output file or prefix that cannot be used: in use by another run, or a write that failed (disk
    full, quota, file size limit, I/O error). Located at the output file, not at the command."""
