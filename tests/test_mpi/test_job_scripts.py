"""The SLURM/PBS job scripts: syntax, one task per GPU, the early signal, and the resubmit recipe, run
for real with stand-ins for srun and sbatch (srun -> mpiexec -n 2 that forwards signals to its tasks as
srun does, sbatch -> a log line)."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.test_mpi.launch import DATA, _flags, clean_env, mpiexec

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "configs" / "slurm" / "mbgpu_mpi.sh"
PBS = ROOT / "configs" / "pbs" / "mbgpu_mpi.sh"


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*/*.sh")), ids=lambda p: p.name)
def test_scripts_parse(path):
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


def test_slurm_one_task_per_gpu_and_early_signal():
    text = SLURM.read_text()
    assert "#SBATCH --gpus-per-task=1" in text and "#SBATCH --signal=B:USR1@300" in text
    assert "trap 'kill -USR1" in text and "append=yes" in text and "sbatch" in text
    pbs = PBS.read_text()
    assert "timeout --preserve-status --signal=USR1" in pbs and "append=yes" in pbs and "qsub" in pbs


# srun passes the signals it gets (USR1 from the batch shell's trap) to every task itself. Not every
# mpiexec does: Open MPI 4.1.6's mpirun kept SIGUSR1 from its ranks (seen on the GPU host, where this test
# then hung), so the stand-in signals the tasks (the leaves of the process tree under mpiexec) itself.
_SRUN = """#!/bin/bash
while [ "${1#-}" != "$1" ]; do shift; done; shift  # options, then 'mbgpu'
for v in $(compgen -e | grep ^SLURM_); do unset $v; done   # so mpiexec does not try srun itself
forward() {  # forward SIG PID: send SIG to the leaf processes (the tasks) below PID
  local k
  for k in $(ps -o pid= --ppid "$2"); do
    if [ -n "$(ps -o pid= --ppid "$k")" ]; then forward "$1" "$k"; else kill -"$1" "$k" 2>/dev/null; fi
  done
}
%s %s -n 2 %s -m mbgpu.mpi "$@" &
pid=$!
trap 'forward USR1 $pid' USR1
trap 'forward TERM $pid' TERM
wait $pid; rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done   # `wait` returns early when a trap fires
exit $rc
"""


def _fake_tools(folder: Path) -> None:
    import sys

    srun = folder / "srun"
    exe = mpiexec()
    srun.write_text(_SRUN % (exe, " ".join(_flags(exe)), sys.executable))
    sbatch = folder / "sbatch"
    sbatch.write_text("#!/bin/bash\necho \"$@\" >> sbatch.log\n")
    for f in (srun, sbatch):
        f.chmod(0o755)


def _job(folder: Path, env: dict) -> subprocess.Popen:
    """The SLURM script on setup.nex, in a process group of its own (see _end)."""
    return subprocess.Popen(["bash", str(SLURM), "setup.nex"], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _end(proc: subprocess.Popen) -> str:
    """Kill what is left of the job's process group (bash, srun stand-in, mpiexec, ranks: a failed test
    must not leave a 200000-generation run behind); the output not yet read."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.stdout is None or proc.stdout.closed:
        return ""
    try:
        return proc.communicate(timeout=30)[0][-4000:]
    except (subprocess.TimeoutExpired, ValueError):
        return ""


@pytest.mark.mpi
def test_slurm_script_checkpoints_on_usr1_and_resubmits_with_append(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tools(bin_dir)
    (tmp_path / "setup.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=5 swapseed=7; execute %s; lset nst=6 rates=gamma;\n"
        " mcmcp ngen=200000 nruns=2 nchains=2 samplefreq=10 printfreq=1000 diagnfreq=1000 checkfreq=100000 "
        "filename=job;\nend;\n" % DATA)
    env = clean_env(PATH="%s:%s" % (bin_dir, os.environ["PATH"]), SLURM_JOB_ID="77", SLURM_SUBMIT_DIR=str(ROOT))
    proc = _job(tmp_path, env)
    try:
        deadline = time.time() + 60
        while not (tmp_path / "job.run1.p").exists() or (tmp_path / "job.run1.p").stat().st_size < 2000:
            if time.time() > deadline or proc.poll() is not None:
                pytest.fail("the job did not get going:\n" + _end(proc))
            time.sleep(0.5)
        proc.send_signal(signal.SIGUSR1)          # what --signal=B:USR1@300 does
        try:
            out = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            pytest.fail("the job did not stop within 60 s of SIGUSR1:\n" + _end(proc))
    finally:
        _end(proc)
    assert proc.returncode == 138, out
    assert "SIGUSR1 received" in out and "resume with 'mcmc append=yes" in out
    assert "append=yes" not in (tmp_path / "run-job-77.nex").read_text()
    log = (tmp_path / "sbatch.log").read_text()
    assert "MBGPU_RESUBMITS=9" in log and "setup.nex" in log
    from mbgpu.checkpoint.session import load

    gen = int(load(str(tmp_path / "job.ckp.h5"))["mc3/generation"][0])
    assert 0 < gen < 200000
    # the resubmitted job: same script, now with the checkpoint present, continues with append=yes
    (tmp_path / "setup.nex").write_text((tmp_path / "setup.nex").read_text().replace("ngen=200000",
                                                                                  "ngen=%d" % (gen + 30)))
    env["SLURM_JOB_ID"] = "78"
    done = _job(tmp_path, env)
    try:
        out = done.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        pytest.fail("the resubmitted job did not finish within 120 s:\n" + _end(done))
    finally:
        _end(done)
    assert done.returncode == 0, out
    assert "mcmc append=yes" in (tmp_path / "run-job-78.nex").read_text()
    assert "Continuing from checkpoint" in out
    rows = (tmp_path / "job.run1.p").read_text().splitlines()
    assert int(rows[-1].split("\t")[0]) == (gen + 30) // 10 * 10        # samplefreq=10
