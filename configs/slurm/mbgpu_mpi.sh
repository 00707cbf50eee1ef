#!/bin/bash
# mbgpu on a SLURM cluster: one MPI task per GPU, a checkpoint 5 minutes before the time limit, and an
# automatic resubmission that continues from it (mcmc append=yes).  See docs/hpc.md.
#
#   sbatch configs/slurm/mbgpu_mpi.sh SETUP.nex
#
# SETUP.nex holds the data, the model and an `mcmcp ... filename=STEM checkpoint=yes checkfreq=...;` line,
# but no `mcmc` command: this script runs `mcmc;` (first job) or `mcmc append=yes;` (when STEM.ckp.h5
# exists).  Tasks = nruns x nchains (or fewer; chains are spread over the tasks).
#SBATCH --job-name=mbgpu
#SBATCH --nodes=1
#SBATCH --ntasks=8
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=2
#SBATCH --time=24:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --output=mbgpu-%x-%j.out
#SBATCH --open-mode=append

set -u
SETUP=${1:?usage: sbatch mbgpu_mpi.sh SETUP.nex}
STEM=${MBGPU_STEM:-$(sed -n 's/.*filename=\([^ ;]*\).*/\1/Ip' "$SETUP" | tail -1)}
STEM=${STEM:?put filename=STEM in the mcmcp line of $SETUP or set MBGPU_STEM}
LEFT=${MBGPU_RESUBMITS:-10}          # how many more jobs may follow this one
SCRIPT=${MBGPU_SCRIPT:-$SLURM_SUBMIT_DIR/configs/slurm/mbgpu_mpi.sh}

MODE=""
[ -f "$STEM.ckp.h5" ] && MODE="append=yes"
RUN="run-$STEM-$SLURM_JOB_ID.nex"
printf '#NEXUS\nbegin mrbayes;\n  set autoclose=yes;\n  execute %s;\n  mcmc %s;\nend;\n' "$SETUP" "$MODE" > "$RUN"

# Optional: let every rank find the kernels compiled by the first job (one cache per cluster user).
export MBGPU_KERNEL_CACHE=${MBGPU_KERNEL_CACHE:-$HOME/.cache/mbgpu/kernels}

# --signal=B:USR1@300 sends USR1 to this shell only; forward it to srun, which passes it to every task.
# Every rank then stops at the end of the current generation; rank 0 writes STEM.ckp.h5 and exits 138.
srun --kill-on-bad-exit=1 mbgpu "$RUN" &
PID=$!
trap 'kill -USR1 "$PID" 2>/dev/null' USR1
wait "$PID"; RC=$?
while kill -0 "$PID" 2>/dev/null; do wait "$PID"; RC=$?; done   # wait again after the trap fired

if [ "$RC" -eq 138 ] && [ "$LEFT" -gt 0 ]; then
  echo "mbgpu stopped for the time limit with a checkpoint; resubmitting ($LEFT more allowed)"
  sbatch --export=ALL,MBGPU_RESUBMITS=$((LEFT - 1)),MBGPU_STEM="$STEM",MBGPU_SCRIPT="$SCRIPT" "$SCRIPT" "$SETUP"
fi
exit "$RC"
