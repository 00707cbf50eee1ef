"""`python -m mbgpu.mpi FILE.nex`: the MPI-aware session (what `mbgpu FILE.nex` runs once engine/cli.py
hands `_run_files` to mbgpu.mpi.run.main); user errors print one line and give status 2."""
import sys

from mbgpu.errors import MbgpuError


def main(argv: list[str] | None = None) -> int:
    from mbgpu.mpi.run import main as run_main
    from mbgpu.session import run_cli

    try:
        return run_main(list(sys.argv[1:] if argv is None else argv), run_cli)
    except MbgpuError as err:
        print(err.one_line(), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
