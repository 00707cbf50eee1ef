#!/bin/bash
# mbgpu with site decomposition, for data too large for one GPU: each chain group spans K GPUs that split
# the site patterns (`set sitesplit=K;` in SETUP.nex).  Here 2 nodes x 4 GPUs = 8 ranks; with sitesplit=2
# they form 4 chain groups of 2 GPUs (on one node each).  Checkpoint, requeue and append as in
# mbgpu_mpi.sh, whose body this script repeats (sbatch copies a job script alone, so it cannot source
# its neighbour).  docs/hpc.md explains each line.
#
#   cd /my/analysis && sbatch /path/to/mbgpu_sitesplit.sh SETUP.nex   (SETUP.nex: set sitesplit=2; ... mcmcp ...;)
#
# SETUP.nex (relative to the directory you submit from, where every output goes) holds the data, the model
# and `mcmcp ... filename=STEM checkpoint=yes checkfreq=1000;` but no `mcmc` command.  Ranks = the tasks
# below, a multiple of sitesplit, and at most nruns x nchains x sitesplit.
#
# Edit the header: remove one '#' from the partition/account lines and fill them in if your cluster needs
# them; keep --ntasks = --nodes x --ntasks-per-node (one GPU per task).  Cluster without select/cons_tres
# (sbatch rejects --gpus-per-task)?  Put '#' before the --gpus-per-task line and remove one '#' from the
# --gres line (N in gpu:N = --ntasks-per-node): every rank then sees all GPUs of its node and takes the
# one of its local rank.
#SBATCH --job-name=mbgpu-split
##SBATCH --partition=PARTITION
##SBATCH --account=ACCOUNT
#SBATCH --nodes=2
#SBATCH --ntasks=8
#SBATCH --ntasks-per-node=4
#SBATCH --gpus-per-task=1
##SBATCH --gres=gpu:4
#SBATCH --cpus-per-task=4
#SBATCH --time=24:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out

# --- site setup (optional): the MPI mpi4py was built against, and the environment holding mbgpu ---
# module load openmpi
# source "$HOME/venvs/mbgpu/bin/activate"
# export XDG_CACHE_HOME=/shared/cache  # compiled kernels go to $XDG_CACHE_HOME/mbgpu (default ~/.cache/mbgpu)
# export SLURM_MPI_TYPE=pmix          # if plain `srun` does not start MPI ranks here (see: srun --mpi=list)

set -u
die() { echo "mbgpu job: $*" >&2; exit 2; }

cd "${SLURM_SUBMIT_DIR:?submit this script with sbatch}" || exit 2
SETUP=${1:-${SETUP:-}}
[ -n "$SETUP" ] || die "usage: sbatch JOB_SCRIPT SETUP.nex (SETUP.nex relative to the submit directory)"
case $SETUP in /*) ;; *) SETUP=$PWD/$SETUP ;; esac
[ -f "$SETUP" ] || die "no file '$SETUP'"
if grep -Eiq '(^|;)[[:space:]]*mcmc([[:space:]]|;|$)' "$SETUP"; then
  die "$SETUP has an 'mcmc' command: keep the settings in 'mcmcp ...;' and leave 'mcmc' to this script"
fi
# The checkpoint is [set dir=DIR/]STEM.ckp.h5, STEM from filename= (MBGPU_STEM overrides both).
setting() { sed -nE "s/(^|.*[[:space:];])$1[[:space:]]*=[[:space:]]*['\"]?([^[:space:];'\"]+).*/\\2/Ip" "$SETUP" | tail -1; }
STEM=${MBGPU_STEM:-$(setting filename)}
[ -n "$STEM" ] || die "put filename=STEM in the mcmcp line of $SETUP, or set MBGPU_STEM"
DIR=$(setting dir)
[ -n "${MBGPU_STEM:-}" ] || [ -z "$DIR" ] || STEM=$DIR/$STEM

NTASKS=${SLURM_NTASKS:-$(( ${SLURM_JOB_NUM_NODES:-1} * ${SLURM_NTASKS_PER_NODE:-1} ))}
PY=${MBGPU_PYTHON:-python3}
INFO=$("$PY" -c 'import mpi4py, mbgpu.version as v; mpi4py.rc.initialize = False; from mpi4py import MPI
print("mbgpu %s, mpi4py %s, MPI: %s" % (v.__version__, mpi4py.__version__, MPI.Get_library_version().splitlines()[0].strip()))' 2>&1) ||
  die "'$PY' cannot import mbgpu and mpi4py (activate the environment or set MBGPU_PYTHON): ${INFO##*$'\n'}"

MODE=""
if [ -f "$STEM.ckp.h5" ] || [ -f "$STEM.ckp.h5~" ]; then MODE="append=yes"; fi
RUN=$PWD/mbgpu-run-${STEM##*/}-$SLURM_JOB_ID.nex
q="'"   # NEXUS quoting: the path in single quotes, a quote inside doubled
printf "#NEXUS\nbegin mrbayes;\n  set autoclose=yes;\n  execute '%s';\n  mcmc %s;\nend;\n" "${SETUP//$q/$q$q}" "$MODE" > "$RUN"
RESTARTS=${SLURM_RESTART_COUNT:-0}
echo "mbgpu job $SLURM_JOB_ID, start $((RESTARTS + 1)): $NTASKS ranks on ${SLURM_JOB_NUM_NODES:-1} node(s) in $PWD;" \
     "mcmc ${MODE:-(new run)}; $INFO"

# --signal=B:USR1@300 signals only this shell: forward USR1 to srun, which passes it to every rank; the
# ranks stop at their next stop check, rank 0 writes STEM.ckp.h5 and mbgpu exits with 138.
# SIGTERM (scancel, the time limit itself) is forwarded too; mbgpu then checkpoints and exits with 143.
STOPPED=0 PID=""
trap 'STOPPED=1; [ -n "$PID" ] && kill -USR1 "$PID" 2>/dev/null' USR1
trap '[ -n "$PID" ] && kill -TERM "$PID" 2>/dev/null' TERM
srun --ntasks="$NTASKS" ${SLURM_CPUS_PER_TASK:+--cpus-per-task=$SLURM_CPUS_PER_TASK} --kill-on-bad-exit=1 \
     "$PY" -m mbgpu.mpi "$RUN" &
PID=$!
wait "$PID"; RC=$?
while kill -0 "$PID" 2>/dev/null; do wait "$PID"; RC=$?; done   # `wait` returns early when a trap runs

if [ "$RC" -eq 138 ] || { [ "$STOPPED" = 1 ] && [ "$RC" -ne 0 ] && [ "$STEM.ckp.h5" -nt "$RUN" ]; }; then
  MAX=${MBGPU_MAX_REQUEUES:-10}
  if [ "$RESTARTS" -lt "$MAX" ]; then
    echo "mbgpu job: stopped before the time limit with checkpoint $STEM.ckp.h5; requeueing job $SLURM_JOB_ID"
    scontrol requeue "$SLURM_JOB_ID" ||
      echo "mbgpu job: requeue refused; submit the same command again to continue from the checkpoint" >&2
  else
    echo "mbgpu job: requeued $RESTARTS times (MBGPU_MAX_REQUEUES=$MAX); submit again to continue" >&2
  fi
fi
exit "$RC"
