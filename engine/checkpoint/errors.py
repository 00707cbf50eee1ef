"""Typed errors of checkpoint reading and resuming; each names the file and what is wrong with it.

They derive from mbgpu.errors.InputFileError so the CLI prints them as one `file:line:col: error:` line
with exit status 2 (the mcmc command's location is attached by the command handler).
"""
from __future__ import annotations

from mbgpu.errors import InputFileError


class CheckpointError(InputFileError):
    """Base class: a checkpoint that cannot be used to resume; nothing was modified."""


class CheckpointMissing(CheckpointError):
    """`mcmc append=yes` found no checkpoint file (nor a previous one to fall back to)."""


class CheckpointCorrupt(CheckpointError):
    """The checkpoint is truncated, not an HDF5 file, fails a checksum, or misses datasets."""


class CheckpointMismatch(CheckpointError):
    """The checkpoint was written for other data, another model or other run settings."""


class OutputMismatch(CheckpointError):
    """An output file the checkpoint refers to is missing, shorter, or changed since it was written."""
