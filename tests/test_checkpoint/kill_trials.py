"""kill -9 at random moments of a run with frequent checkpoints, then `mcmc append=yes`.

Each trial starts `python -m mbgpu` (the `mbgpu` command) in a fresh folder, waits for its first
checkpoint, kills it with SIGKILL after a random delay (so some kills land inside a checkpoint write),
checks that NAME.ckp.h5 (or, failing that, NAME.ckp.h5~) is a valid checkpoint, resumes it with
append=yes and compares every output file with an uninterrupted run's.

    python -m tests.test_checkpoint.kill_trials --trials 20 [--seed 1] [--keep DIR]

prints one line per trial and exits 1 if any trial failed. tests/test_checkpoint/test_kill.py runs a few.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "primates.nex"
NGEN = 400
OUTPUTS = ("r.run1.p", "r.run2.p", "r.run1.t", "r.run2.t", "r.mcmc")


def command_file(ngen: int, extra: str = "") -> str:
    return ("#NEXUS\nbegin mrbayes; set seed=11 swapseed=12; execute %s;\n lset nst=2 rates=gamma;\n"
            " mcmc ngen=%d nruns=2 nchains=2 samplefreq=10 printfreq=100 diagnfreq=50 tunefreq=20 checkfreq=10 "
            "filename=r %s; end;\n" % (DATA, ngen, extra))


def mbgpu(folder: Path, text: str, name: str) -> subprocess.Popen:
    cmd = folder.parent / ("%s_%s.nex" % (folder.name, name))
    cmd.write_text(text)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "mbgpu", str(cmd)], cwd=folder, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(proc: subprocess.Popen, what: str) -> str:
    out, _ = proc.communicate(timeout=300)
    if proc.returncode != 0:
        raise AssertionError("%s exited with %d:\n%s" % (what, proc.returncode, out[-2000:]))
    return out


def reference(folder: Path) -> Path:
    folder.mkdir(parents=True)
    finish(mbgpu(folder, command_file(NGEN), "ref"), "the reference run")
    return folder


def usable_checkpoint(folder: Path) -> tuple[str, int]:
    """(file name, generation) of the checkpoint append=yes will use; raises if none is valid."""
    from mbgpu.checkpoint.session import load_for_resume
    from mbgpu.console import Console

    note = io.StringIO()
    payload, source = load_for_resume(str(folder / "r.ckp.h5"), Console(note))
    return os.path.basename(source), int(payload["mc3/generation"][0])


def trial(folder: Path, ref: Path, rng: np.random.Generator, max_delay: float) -> str:
    folder.mkdir(parents=True)
    proc = mbgpu(folder, command_file(NGEN), "run")
    t0 = time.time()
    while not (folder / "r.ckp.h5").exists() and proc.poll() is None and time.time() - t0 < 120:
        time.sleep(0.005)
    delay = float(rng.uniform(0.0, max_delay))
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    source, gen = usable_checkpoint(folder)
    finish(mbgpu(folder, command_file(NGEN, "append=yes"), "append"), "append=yes")
    bad = [n for n in OUTPUTS if (folder / n).read_bytes() != (ref / n).read_bytes()]
    if bad:
        raise AssertionError("after resuming from %s (generation %d): %s differ" % (source, gen, ", ".join(bad)))
    return "%s after %.3f s; resumed from %s at generation %d; outputs identical" % (
        "killed" if killed else "finished", delay, source, gen)


def run_trials(n: int, seed: int, workdir: Path, max_delay: float = 2.0, log=print) -> int:
    """Run `n` trials in `workdir`; returns the number of failures (each is logged)."""
    ref = reference(workdir / "reference")
    rng = np.random.default_rng(seed)
    failures = 0
    for i in range(n):
        try:
            log("trial %2d: %s" % (i + 1, trial(workdir / ("trial%02d" % i), ref, rng, max_delay)))
        except Exception as exc:  # a failed trial is reported, the others still run
            failures += 1
            log("trial %2d: FAILED: %s" % (i + 1, exc))
    return failures


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-delay", type=float, default=2.0)
    ap.add_argument("--keep", help="folder to keep the trials in (default: a temporary one)")
    a = ap.parse_args(argv)
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="mbgpu_kill_"))
    try:
        failures = run_trials(a.trials, a.seed, work, a.max_delay)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("%d of %d trials passed" % (a.trials - failures, a.trials))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
