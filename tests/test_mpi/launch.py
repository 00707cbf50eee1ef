"""Start `mbgpu` runs under mpiexec (or serially) in a folder, for the MPI tests."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import mbgpu.jit
from tests.conftest import TEST_DATA

LAUNCH_PREFIXES = ("OMPI_", "PMI", "PMIX", "MPI_LOCAL", "HYDRA", "SLURM_")
KEEP_PREFIXES = ("OMPI_MCA_", "OMPI_ALLOW_RUN_AS_ROOT")    # the site's MPI configuration, not a launch

ROOT = Path(__file__).resolve().parents[2]
FAULT_ENTRY = Path(__file__).with_name("fault_entry.py")     # mbgpu.mpi with an injected fault (tests only)


DATA = TEST_DATA / "primates.nex"
MCMC = ("mcmc ngen={ngen} nruns=2 nchains=2 samplefreq=10 printfreq=20 diagnfreq=20 tunefreq=10 checkfreq=20 "
        "filename=r{extra};")


def block(ngen: int = 60, mcmc_extra: str = "", set_extra: str = "") -> str:
    """A small GTR+G analysis of the primates data: 2 runs x 2 chains (so N = 1..4 ranks)."""
    return ("#NEXUS\nbegin mrbayes; set seed=5 swapseed=7 %s; execute %s;\n lset nst=6 rates=gamma;\n %s\nend;\n"
            % (set_extra, DATA, MCMC.format(ngen=ngen, extra=(" " + mcmc_extra) if mcmc_extra else "")))


def clean_env(**extra) -> dict:
    """This environment without any launcher's variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCH_PREFIXES) or k.startswith(KEEP_PREFIXES)}
    env.update(extra)
    # the compiled core's numba cache of this test process, also where a test gives the job its own
    # HOME: the jobs test launching and signals, not numba's first compile (tens of seconds per rank)
    env.setdefault("NUMBA_CACHE_DIR", mbgpu.jit.numba.config.CACHE_DIR)     # set by mbgpu.jit
    return env


def mpiexec() -> str | None:
    """$MBGPU_MPIEXEC, else the mpiexec beside this Python (the mpich wheel's), else the one on PATH."""
    return os.environ.get("MBGPU_MPIEXEC") or shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")


def _flags(exe: str) -> list[str]:
    text = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in text or "OpenRTE" in text:
        return ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return []


def run(folder: Path, text: str, n: int | None, timeout: float = 240, fault: str | None = None,
        backend: str = "cpu", **env) -> subprocess.CompletedProcess:
    """Write `text` to folder/run.nex and run it on `backend` (`--backend=cpu` unless told) with n ranks
    (None: serially, no launcher at all). `fault` "RANK:GEN:raise|kill|usr1": through fault_entry.py, which
    injects that fault."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.nex").write_text(text)
    entry = [str(FAULT_ENTRY), fault] if fault is not None else ["-m", "mbgpu.mpi"]
    cmd = [sys.executable, *entry, "--backend=%s" % backend, "run.nex"]
    if n is not None:
        exe = mpiexec()
        cmd = [exe, *_flags(exe), "-n", str(n), *cmd]
    return subprocess.run(cmd, cwd=folder, env=clean_env(**env), capture_output=True, text=True, timeout=timeout)


OUTPUTS = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")


LAYOUT_ROW = re.compile(r"^\s+\d+ -- \(\d+,\d+\)")
TIMES = re.compile(r"\d+:\d\d:\d\d|Analysis (?:completed in|used) .*")


def screen(text: str) -> list[str]:
    """The screen's lines less the MPI layout table, times blanked: what a serial and an MPI run share."""
    return [TIMES.sub("T", line) for line in text.splitlines()
            if not (line.startswith("   MPI layout: ") or line == "      rank -- (run, chain) -- device"
                    or LAYOUT_ROW.match(line))]

