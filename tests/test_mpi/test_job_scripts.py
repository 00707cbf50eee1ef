"""The SLURM/PBS job scripts: syntax, one task per GPU, the early signal, and the resubmit recipe, run
for real with stand-ins for srun and sbatch (srun -> mpiexec -n 2, sbatch -> a log line)."""
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


def _fake_tools(folder: Path) -> None:
    import sys

    srun = folder / "srun"
    exe = mpiexec()
    srun.write_text("#!/bin/bash\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done; shift  # options, then 'mbgpu'\n"
                    "for v in $(compgen -e | grep ^SLURM_); do unset $v; done   # so mpiexec does not try srun itself\n"
                    "exec %s %s -n 2 %s -m engine.mpi \"$@\"\n" % (exe, " ".join(_flags(exe)), sys.executable))
    sbatch = folder / "sbatch"
    sbatch.write_text("#!/bin/bash\necho \"$@\" >> sbatch.log\n")
    for f in (srun, sbatch):
        f.chmod(0o755)


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
    proc = subprocess.Popen(["bash", str(SLURM), "setup.nex"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while not (tmp_path / "job.run1.p").exists() or (tmp_path / "job.run1.p").stat().st_size < 2000:
        assert time.time() < deadline and proc.poll() is None, proc.communicate()[0]
        time.sleep(0.5)
    proc.send_signal(signal.SIGUSR1)          # what --signal=B:USR1@300 does
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 138, out
    assert "SIGUSR1 received" in out and "resume with 'mcmc append=yes" in out
    assert "append=yes" not in (tmp_path / "run-job-77.nex").read_text()
    log = (tmp_path / "sbatch.log").read_text()
    assert "MBGPU_RESUBMITS=9" in log and "setup.nex" in log
    from engine.checkpoint.session import load

    gen = int(load(str(tmp_path / "job.ckp.h5"))["mc3/generation"][0])
    assert 0 < gen < 200000
    # the resubmitted job: same script, now with the checkpoint present, continues with append=yes
    (tmp_path / "setup.nex").write_text((tmp_path / "setup.nex").read_text().replace("ngen=200000",
                                                                                  "ngen=%d" % (gen + 30)))
    env["SLURM_JOB_ID"] = "78"
    done = subprocess.run(["bash", str(SLURM), "setup.nex"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mcmc append=yes" in (tmp_path / "run-job-78.nex").read_text()
    assert "Continuing from checkpoint" in done.stdout
    rows = (tmp_path / "job.run1.p").read_text().splitlines()
    assert int(rows[-1].split("\t")[0]) == (gen + 30) // 10 * 10        # samplefreq=10
