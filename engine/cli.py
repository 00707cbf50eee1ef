"""The `mbgpu` command: `mbgpu [-i] [FILE ...]` like MrBayes' `mb`, plus tool subcommands.

User mistakes (any `MbgpuError`) print one line on stderr and exit with status 2; nothing else
reaches the user as a traceback unless it is a bug.
"""
from __future__ import annotations

import errno
import importlib
import os
import sys

from .errors import MbgpuError
from .subcommands import SUBCOMMANDS
from .version import __version__

STORAGE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EIO, getattr(errno, "EDQUOT", errno.ENOSPC)}

USAGE = """usage: mbgpu [-i] [--backend=auto|cpu|gpu] [FILE ...]
       mbgpu {align,ssv,potential} ...   (see mbgpu TOOL -h)
       mbgpu --devices | -v | -h

Executes the NEXUS FILEs (data blocks and mrbayes blocks) in order, like MrBayes' `mb`.
  -i          keep an interactive prompt (mbgpu > ) after the files
  -v          print the version
  -h          this help; `help` at the prompt lists the commands
  --devices   list CUDA devices with their memory
  --backend=auto|cpu|gpu  likelihood backend: `set backend=` before the first file; cpu or gpu
              overrides set usebeagle/beagledevice, auto (the default) follows them
tools:
%s""" % "\n".join("  %-10s  %s" % (k, v[1]) for k, v in SUBCOMMANDS.items())


def _run_subcommand(name: str, argv: list[str]) -> int:
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main(argv) or 0)


def _list_devices() -> int:
    from mbgpu.cuda.context import list_devices

    for d in list_devices():
        print("%d  %s  %.1f GiB  sm_%d%d" % (d.index, d.name, d.total_bytes / 2**30, *d.compute_capability))
    return 0


def _run_files(argv: list[str]) -> int:
    from .mpi.run import main as run_session
    from .session import run_cli

    return run_session(argv, run_cli)   # under mpirun/srun: rank 0 runs the session, the others serve it


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("-h", "--help"):
            print(USAGE)
            return 0
        if argv and argv[0] in ("-v", "--version"):
            print("mbgpu %s" % __version__)
            return 0
        if argv and argv[0] == "--devices":
            return _list_devices()
        if argv and argv[0] in SUBCOMMANDS:
            return _run_subcommand(argv[0], argv[1:])
        return _run_files(argv)
    except MbgpuError as err:
        print(err.one_line(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mbgpu: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _closed_pipe()
    except OSError as exc:
        if exc.errno not in STORAGE_ERRNOS:
            raise
        return _storage_failure(exc)


def _storage_failure(exc: OSError) -> int:
    """A write the run's own files did not report (the screen redirected to a full disk, a log file):
    one line and status 2, as for every error of the user's environment."""
    from .output.write_failure import describe

    what = "writing '%s'" % exc.filename if exc.filename else "a write"
    print("mbgpu: error: %s failed: %s" % (what, describe(exc, exc.filename or ".")), file=sys.stderr)
    return 2


def _closed_pipe() -> int:
    """The reader of our output went away (`mbgpu -h | head -1`): exit quietly, as a shell tool does.
    stdout is pointed at /dev/null so the interpreter's final flush raises nothing either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141   # 128 + SIGPIPE, what a shell reports for a tool killed by the broken pipe


if __name__ == "__main__":
    sys.exit(main())
