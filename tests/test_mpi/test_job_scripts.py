"""The SLURM and PBS job scripts, run as a cluster would run them but with stand-ins: the scheduler's
variables set, the script started from a directory other than the submit directory, and stub srun,
mpirun, scontrol, qsub, qstat and python3 first on PATH, each logging its arguments. Checked: the header
asks for as many GPUs as tasks, the launcher starts that many ranks (taken from the scheduler's
environment) on the NEXUS file resolved against the submit directory, `mcmc append=yes` once a
checkpoint exists, the early signal reaches the ranks, and the job is requeued (SLURM) or resubmitted
(PBS). No MPI, GPU or mbgpu run is needed, except in the last test (marked mpi), which runs the SLURM
script for real with srun played by mpiexec."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "configs" / "slurm" / "mbgpu_mpi.sh"
SITESPLIT = ROOT / "configs" / "slurm" / "mbgpu_sitesplit.sh"
PBS = ROOT / "configs" / "pbs" / "mbgpu_mpi.sh"
SLURM_SCRIPTS = [SLURM, SITESPLIT]
SETUP = ("#NEXUS\nbegin mrbayes;\n  set seed=5 swapseed=7;\n  execute primates.nex;\n"
         "  mcmcp ngen=100000 nruns=2 nchains=2 checkfreq=1000 filename=job;\nend;\n")

# Stand-ins. Each logs one tab-separated line per call to $STUB_LOG. The launchers start their command
# once (whatever the rank count) and wait for it; srun forwards USR1/TERM to it as the real one does, the
# mpirun stub keeps them (as Open MPI 4.1.6's mpirun did with USR1). The rank (python3) writes the
# checkpoint $STUB_CKP and exits 128 + signal when signalled, like mbgpu; with STUB_RANK=wait it runs
# until then, otherwise it finishes at once.
_LOG = '(IFS=$\'\\t\'; echo "%s\t$PWD\t$*") >> "$STUB_LOG"\n'
_WAIT = 'pid=$!\n%s\nwait $pid; rc=$?\nwhile kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done\nexit $rc\n'
STUBS = {
    "srun": "#!/bin/bash\n" + _LOG % "srun" + 'while [ "${1#-}" != "$1" ]; do shift; done\n"$@" &\n'
            + _WAIT % "trap 'kill -USR1 $pid' USR1\ntrap 'kill -TERM $pid' TERM",
    "mpirun": "#!/bin/bash\n" + _LOG % "mpirun" + '[ "$1" = --version ] && { echo "stub mpirun 1.0"; exit 0; }\n'
              'shift 4\n"$@" &\n' + _WAIT % ("trap 'echo \"mpirun\tUSR1\" >> \"$STUB_LOG\"' USR1\n"
                                             "trap 'echo \"mpirun\tTERM\" >> \"$STUB_LOG\"' TERM"),
    "scontrol": "#!/bin/bash\n" + _LOG % "scontrol",
    "qsub": "#!/bin/bash\n" + _LOG % "qsub" + "echo 124.server\n",
    "qstat": '#!/bin/bash\necho "    Resource_List.walltime = $STUB_WALLTIME"\n',
}
RANK = ("#!/bin/bash\n"
        'if [ "$1" = -c ]; then echo "mbgpu stub, mpi4py stub, MPI: Stub MPI 1.0"; exit 0; fi\n'
        + _LOG % "rank" +
        "trap 'echo \"rank\tUSR1\" >> \"$STUB_LOG\"; echo ckp > \"$STUB_CKP\"; exit 138' USR1\n"
        "trap 'echo \"rank\tTERM\" >> \"$STUB_LOG\"; echo ckp > \"$STUB_CKP\"; exit 143' TERM\n"
        '[ "${STUB_RANK:-finish}" = finish ] && exit 0\n'
        'touch "$STUB_LOG.ready"\nwhile :; do sleep 0.05; done\n')


# -- the headers -------------------------------------------------------------------------------------
def _directives(path: Path, prefix: str) -> list[str]:
    return [line[len(prefix):].strip() for line in path.read_text().splitlines() if line.startswith(prefix + " ")]


def _sbatch(path: Path, prefix: str = "#SBATCH") -> dict[str, str]:
    return dict(d.lstrip("-").split("=", 1) for d in _directives(path, prefix) if "=" in d)


def slurm_request(path: Path) -> tuple[int, int, int]:
    """(nodes, tasks, GPUs) the #SBATCH lines ask for; also with the documented --gres swap."""
    opts = _sbatch(path)
    nodes, tasks = int(opts["nodes"]), int(opts["ntasks"])    # Slurm 23.11 wants --ntasks with --gpus-per-task
    assert tasks == nodes * int(opts["ntasks-per-node"])
    if "gpus-per-task" in opts:
        gpus = tasks * int(opts["gpus-per-task"])
    else:
        gpus = nodes * int(opts["gres"].rsplit(":", 1)[1])
    return nodes, tasks, gpus


def gres_swapped(text: str) -> str:
    """The script as docs/hpc.md and its header say to change it for a cluster without select/cons_tres."""
    text = text.replace("\n#SBATCH --gpus-per-task=1\n", "\n##SBATCH --gpus-per-task=1\n")
    return re.sub(r"\n##SBATCH --gres=", "\n#SBATCH --gres=", text)


def pbs_request(path: Path) -> tuple[int, int]:
    """(ranks, GPUs) of the #PBS select line: chunks x mpiprocs, chunks x ngpus."""
    (select,) = [d for d in _directives(path, "#PBS") if d.startswith("-l select=")]
    count, *resources = select[len("-l select="):].split(":")
    res = dict(r.split("=") for r in resources)
    return int(count) * int(res["mpiprocs"]), int(count) * int(res["ngpus"])


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*/*.sh")), ids=lambda p: p.parent.name + "/" + p.name)
def test_scripts_parse(path):
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0


@pytest.mark.parametrize("path", SLURM_SCRIPTS, ids=lambda p: p.name)
def test_slurm_header_one_gpu_per_task_and_placeholders(path, tmp_path):
    nodes, tasks, gpus = slurm_request(path)
    assert gpus == tasks
    swapped = tmp_path / path.name
    swapped.write_text(gres_swapped(path.read_text()))
    assert "gpus-per-task" not in _sbatch(swapped) and "gres" in _sbatch(swapped)
    assert slurm_request(swapped) == (nodes, tasks, gpus)       # the fallback asks for the same GPUs
    assert subprocess.run(["bash", "-n", str(swapped)]).returncode == 0
    text = path.read_text()
    for line in ("##SBATCH --partition=", "##SBATCH --account=", "#SBATCH --signal=B:USR1@300\n",
                 "#SBATCH --requeue\n", "#SBATCH --time="):
        assert line in text
    if path == SLURM:
        assert (nodes, tasks) == (1, 4)                           # a modest default


def test_sitesplit_script_repeats_the_body():
    body = SLURM.read_text()
    assert SITESPLIT.read_text().endswith(body[body.index("# --- site setup"):])


def test_pbs_header_one_gpu_per_rank_and_placeholders():
    ranks, gpus = pbs_request(PBS)
    assert ranks == gpus == 4
    text = PBS.read_text()
    torque = re.search(r"^##PBS -l nodes=(\d+):ppn=(\d+):gpus=(\d+)$", text, re.M)
    assert torque and torque[2] == torque[3]
    for line in ("##PBS -q ", "##PBS -A ", "#PBS -r y\n", "#PBS -l walltime="):
        assert line in text


# -- running the scripts under stand-ins -------------------------------------------------------------
@pytest.fixture
def site(tmp_path) -> SimpleNamespace:
    """A submit directory with data/setup.nex, another working directory, stubs on PATH, a log."""
    submit, elsewhere, bin_dir, py_dir = (tmp_path / n for n in ("submit", "elsewhere", "bin", "pybin"))
    for d in (submit / "data", elsewhere, bin_dir, py_dir):
        d.mkdir(parents=True)
    (submit / "data" / "setup.nex").write_text(SETUP)
    for name, text in [*STUBS.items(), ("python3", RANK)]:
        stub = (py_dir if name == "python3" else bin_dir) / name
        stub.write_text(text)
        stub.chmod(0o755)
    log = tmp_path / "calls.log"
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "PBS_", "OMPI_", "PMI", "MBGPU_"))}
    env = dict(keep, PATH="%s:%s:%s" % (bin_dir, py_dir, os.environ["PATH"]), STUB_LOG=str(log),
               STUB_CKP=str(submit / "job.ckp.h5"), HOME=str(tmp_path))
    return SimpleNamespace(submit=submit, elsewhere=elsewhere, bin=bin_dir, py=py_dir, log=log, env=env)


def start(site, script: Path, args=(), **env) -> subprocess.Popen:
    """bash SCRIPT ARGS from site.elsewhere, in a process group of its own (see finish)."""
    return subprocess.Popen(["bash", str(script), *args], cwd=site.elsewhere, env=dict(site.env, **env),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def finish(proc: subprocess.Popen, timeout: float = 10) -> tuple[int, str]:
    """(exit status, output); whatever is left of the job's process group is killed."""
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        out = None
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if out is None:
        out = "(timed out after %g s)\n%s" % (timeout, proc.communicate()[0])
    return proc.wait(), out


def signal_when_running(site, proc: subprocess.Popen, signum: int) -> None:
    """Wait for the rank stub to be running, then send `signum` to the batch shell (what SLURM does)."""
    ready = Path(str(site.log) + ".ready")
    deadline = time.time() + 5
    while not ready.exists():
        assert time.time() < deadline and proc.poll() is None, finish(proc)[1]
        time.sleep(0.02)
    ready.unlink()
    proc.send_signal(signum)


def calls(site, tool: str) -> list[list[str]]:
    """Each logged call of `tool`: [working directory, arg, ...]."""
    if not site.log.exists():
        return []
    return [line.split("\t")[1:] for line in site.log.read_text().splitlines() if line.split("\t")[0] == tool]


def slurm_env(site, script: Path, **extra) -> dict:
    nodes, tasks, _gpus = slurm_request(script)
    env = dict(SLURM_SUBMIT_DIR=str(site.submit), SLURM_JOB_ID="77", SLURM_NTASKS=str(tasks),
               SLURM_JOB_NUM_NODES=str(nodes), SLURM_CPUS_PER_TASK=_sbatch(script)["cpus-per-task"])
    env.update(extra)
    return env


def wrapper(site, jobid: str) -> str:
    return (site.submit / ("mbgpu-run-job-%s.nex" % jobid)).read_text()


@pytest.mark.parametrize("script", SLURM_SCRIPTS, ids=lambda p: p.name)
@pytest.mark.parametrize("ntasks_from", ["SLURM_NTASKS", "nodes x ntasks-per-node"])
def test_slurm_launches_one_rank_per_requested_gpu_from_the_submit_dir(site, script, ntasks_from):
    env = slurm_env(site, script)
    if ntasks_from != "SLURM_NTASKS":
        del env["SLURM_NTASKS"]
        env["SLURM_NTASKS_PER_NODE"] = _sbatch(script)["ntasks-per-node"]
    rc, out = finish(start(site, script, ["data/setup.nex"], **env))
    assert rc == 0, out
    (srun,) = calls(site, "srun")
    _nodes, tasks, gpus = slurm_request(script)
    run = str(site.submit / "mbgpu-run-job-77.nex")
    assert srun == [str(site.submit), "--ntasks=%d" % gpus, "--cpus-per-task=4", "--kill-on-bad-exit=1",
                    "python3", "-m", "mbgpu.mpi", run]
    assert calls(site, "rank") == [[str(site.submit), "-m", "mbgpu.mpi", run]]
    assert "execute '%s';\n  mcmc ;\n" % (site.submit / "data" / "setup.nex") in wrapper(site, "77")
    assert "%d ranks" % tasks in out and "Stub MPI 1.0" in out
    assert calls(site, "scontrol") == []


@pytest.mark.parametrize("script", SLURM_SCRIPTS, ids=lambda p: p.name)
def test_slurm_usr1_checkpoints_requeues_and_the_restart_appends(site, script):
    env = slurm_env(site, script)
    proc = start(site, script, ["data/setup.nex"], STUB_RANK="wait", **env)
    signal_when_running(site, proc, signal.SIGUSR1)         # what --signal=B:USR1@300 does
    rc, out = finish(proc)
    assert rc == 138, out
    assert ["USR1"] in calls(site, "rank")                 # forwarded through srun to the rank
    assert calls(site, "scontrol") == [[str(site.submit), "requeue", "77"]]
    assert "append=yes" not in wrapper(site, "77")
    # the requeued job: same job id and arguments, SLURM_RESTART_COUNT set, the checkpoint present
    site.log.unlink()
    rc, out = finish(start(site, script, ["data/setup.nex"], SLURM_RESTART_COUNT="1", **env))
    assert rc == 0, out
    assert "  mcmc append=yes;\n" in wrapper(site, "77")
    assert len(calls(site, "srun")) == 1 and calls(site, "scontrol") == []


def test_slurm_stops_requeueing_after_the_limit_and_not_after_sigterm(site):
    env = slurm_env(site, SLURM)
    proc = start(site, SLURM, ["data/setup.nex"], STUB_RANK="wait", SLURM_RESTART_COUNT="3",
                 MBGPU_MAX_REQUEUES="3", **env)
    signal_when_running(site, proc, signal.SIGUSR1)
    rc, out = finish(proc)
    assert rc == 138 and calls(site, "scontrol") == [] and "MBGPU_MAX_REQUEUES=3" in out
    site.log.unlink()
    proc = start(site, SLURM, ["data/setup.nex"], STUB_RANK="wait", **env)
    signal_when_running(site, proc, signal.SIGTERM)        # scancel or the time limit itself
    rc, out = finish(proc)
    assert rc == 143, out
    assert ["TERM"] in calls(site, "rank") and calls(site, "scontrol") == []


@pytest.mark.parametrize("checkpoint", ["out/job.ckp.h5", "out/job.ckp.h5~"])
def test_slurm_finds_the_checkpoint_under_set_dir(site, checkpoint):
    (site.submit / "data" / "setup.nex").write_text(SETUP.replace("set seed=5", "set dir=out seed=5"))
    (site.submit / "out").mkdir()
    (site.submit / checkpoint).write_text("ckp")
    rc, out = finish(start(site, SLURM, [], SETUP="data/setup.nex", **slurm_env(site, SLURM)))
    assert rc == 0, out
    assert "  mcmc append=yes;\n" in wrapper(site, "77")


@pytest.mark.parametrize("setup, args, message", [
    (SETUP, [], "usage: sbatch JOB_SCRIPT SETUP.nex"),
    (SETUP, ["data/missing.nex"], "no file '%s/data/missing.nex'"),
    (SETUP.replace("end;", "  mcmc;\nend;"), ["data/setup.nex"], "has an 'mcmc' command"),
    (SETUP.replace(" filename=job", ""), ["data/setup.nex"], "put filename=STEM in the mcmcp line"),
])
def test_slurm_refuses_what_would_go_wrong(site, setup, args, message):
    (site.submit / "data" / "setup.nex").write_text(setup)
    rc, out = finish(start(site, SLURM, args, **slurm_env(site, SLURM)))
    assert rc == 2 and message.replace("%s", str(site.submit)) in out, out
    assert calls(site, "srun") == []


def pbs_env(site, **extra) -> dict:
    ranks, _gpus = pbs_request(PBS)
    nodefile = site.submit.parent / "nodefile"
    nodefile.write_text("gpu17\n" * ranks)
    env = dict(PBS_O_WORKDIR=str(site.submit), PBS_NODEFILE=str(nodefile), PBS_JOBID="123.server",
               STUB_WALLTIME="24:00:00")
    env.update(extra)
    return env


def test_pbs_launches_one_rank_per_requested_gpu_from_the_submit_dir(site):
    env = pbs_env(site, SETUP="data/setup.nex")
    rc, out = finish(start(site, PBS, **env))
    assert rc == 0, out
    mpirun = [c for c in calls(site, "mpirun") if c[1:] != ["--version"]]
    run = str(site.submit / "mbgpu-run-job-123.nex")
    ranks, gpus = pbs_request(PBS)
    assert mpirun == [[str(site.submit), "-np", str(gpus), "--hostfile", env["PBS_NODEFILE"],
                       "python3", "-m", "mbgpu.mpi", run]]
    assert calls(site, "rank") == [[str(site.submit), "-m", "mbgpu.mpi", run]]
    assert "execute '%s';\n  mcmc ;\n" % (site.submit / "data" / "setup.nex") in wrapper(site, "123")
    assert "%d ranks" % ranks in out and "stub mpirun 1.0" in out
    assert calls(site, "qsub") == []


@pytest.mark.parametrize("walltime_from", ["qstat", "PBS_WALLTIME"])
def test_pbs_stops_the_ranks_before_the_walltime_and_resubmits_with_append(site, walltime_from):
    wall = {"STUB_WALLTIME": "00:00:05"} if walltime_from == "qstat" else {"PBS_WALLTIME": "5"}
    env = pbs_env(site, SETUP="data/setup.nex", MBGPU_STOP_BEFORE_S="3", **wall)
    rc, out = finish(start(site, PBS, STUB_RANK="wait", **env))   # the timer fires after 1-2 s
    assert rc == 138, out
    assert ["USR1"] in calls(site, "rank")           # sent to the rank by the script itself, not via mpirun
    assert ["USR1"] not in calls(site, "mpirun")
    (qsub,) = calls(site, "qsub")
    assert qsub[1:4] == ["-W", "depend=afterany:123.server", "-v"] and qsub[5] == str(PBS)
    assert qsub[4].startswith("SETUP=%s,MBGPU_RESUBMITS=9," % (site.submit / "data" / "setup.nex"))
    assert "MBGPU_STOP_BEFORE_S=3" in qsub[4]
    # the continuation, with the variables qsub -v passes
    site.log.unlink()
    variables = dict(v.split("=", 1) for v in qsub[4].split(","))
    rc, out = finish(start(site, PBS, **dict(env, **variables)))
    assert rc == 0, out
    assert "  mcmc append=yes;\n" in wrapper(site, "123") and calls(site, "qsub") == []


def test_pbs_sigterm_reaches_the_ranks_and_is_not_resubmitted(site):
    proc = start(site, PBS, STUB_RANK="wait", **pbs_env(site, SETUP="data/setup.nex"))
    signal_when_running(site, proc, signal.SIGTERM)       # what PBS sends before it kills the job
    rc, out = finish(proc)
    assert rc == 143, out
    assert ["TERM"] in calls(site, "rank") and calls(site, "qsub") == []


def test_pbs_refuses_the_mpich_wheels_mpirun_beside_python(site):
    (site.py / "mpirun").write_text(STUBS["mpirun"])
    (site.py / "mpirun").chmod(0o755)
    (site.bin / "mpirun").unlink()
    rc, out = finish(start(site, PBS, **pbs_env(site, SETUP="data/setup.nex")))
    assert rc == 2 and "is the mpich wheel's" in out and "MBGPU_MPIRUN=" in out, out
    assert calls(site, "rank") == []
    rc, out = finish(start(site, PBS, **pbs_env(site, SETUP="data/setup.nex", MBGPU_MPIRUN=str(site.py / "mpirun"))))
    assert rc == 0, out


# -- the SLURM script for real: srun played by mpiexec, mbgpu on the CPU ---------------------------------
# srun passes the signals it gets to every task itself; not every mpiexec does (Open MPI 4.1.6's mpirun
# kept SIGUSR1 from its ranks), so this stand-in signals the tasks, the leaves below mpiexec, itself.
_SRUN = """#!/bin/bash
while [ "${1#-}" != "$1" ]; do shift; done                  # srun's options; then python -m mbgpu.mpi RUN
for v in $(compgen -e | grep ^SLURM_); do unset $v; done   # so mpiexec does not try srun itself
forward() {  # forward SIG PID: send SIG to the leaf processes (the tasks) below PID
  local k
  for k in $(ps -o pid= --ppid "$2"); do
    if [ -n "$(ps -o pid= --ppid "$k")" ]; then forward "$1" "$k"; else kill -"$1" "$k" 2>/dev/null; fi
  done
}
%s %s -n 2 "$@" &
pid=$!
trap 'forward USR1 $pid' USR1
trap 'forward TERM $pid' TERM
wait $pid; rc=$?
while kill -0 $pid 2>/dev/null; do wait $pid; rc=$?; done
exit $rc
"""


@pytest.mark.mpi
def test_slurm_script_for_real_checkpoints_on_usr1_and_appends_after_the_requeue(site):
    from mbgpu.checkpoint.session import load
    from tests.test_mpi.launch import DATA, _flags, clean_env, mpiexec

    exe = mpiexec()
    (site.bin / "srun").write_text(_SRUN % (exe, " ".join(_flags(exe))))
    (site.submit / "data" / "setup.nex").write_text(
        "#NEXUS\nbegin mrbayes; set seed=5 swapseed=7 backend=cpu; execute %s;\n lset nst=6 rates=gamma;\n"
        " mcmcp ngen=200000 nruns=2 nchains=2 samplefreq=10 printfreq=1000 diagnfreq=1000 checkfreq=100000 "
        "filename=job;\nend;\n" % DATA)
    env = clean_env(**{k: v for k, v in site.env.items() if k in ("PATH", "STUB_LOG", "HOME")})
    env.update(slurm_env(site, SLURM, SLURM_NTASKS="2", MBGPU_PYTHON=sys.executable))
    p_file = site.submit / "job.run1.p"
    proc = subprocess.Popen(["bash", str(SLURM), "data/setup.nex"], cwd=site.elsewhere, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.time() + 60
    while not p_file.exists() or p_file.stat().st_size < 2000:
        assert time.time() < deadline and proc.poll() is None, "the job did not get going:\n" + finish(proc)[1]
        time.sleep(0.5)
    proc.send_signal(signal.SIGUSR1)                      # what --signal=B:USR1@300 does
    rc, out = finish(proc, timeout=60)
    assert rc == 138, out
    assert "SIGUSR1 received" in out and "resume with 'mcmc append=yes" in out
    assert calls(site, "scontrol") == [[str(site.submit), "requeue", "77"]]
    gen = int(load(str(site.submit / "job.ckp.h5"))["mc3/generation"][0])
    assert 0 < gen < 200000
    # the requeued job: the same script and arguments, now with the checkpoint: continues with append=yes
    setup = site.submit / "data" / "setup.nex"
    setup.write_text(setup.read_text().replace("ngen=200000", "ngen=%d" % (gen + 30)))
    proc = subprocess.Popen(["bash", str(SLURM), "data/setup.nex"], cwd=site.elsewhere,
                            env=dict(env, SLURM_RESTART_COUNT="1"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    rc, out = finish(proc, timeout=120)
    assert rc == 0, out
    assert "mcmc append=yes" in wrapper(site, "77") and "Continuing from checkpoint" in out
    rows = p_file.read_text().splitlines()
    assert int(rows[-1].split("\t")[0]) == (gen + 30) // 10 * 10        # samplefreq=10
