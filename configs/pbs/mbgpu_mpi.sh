#!/bin/bash
# mbgpu on a PBS Pro / OpenPBS cluster: one MPI rank per GPU (4 per node here), a checkpoint 5 minutes
# before the walltime, and resubmission with mcmc append=yes.  See docs/hpc.md.
#
#   qsub -v SETUP=analysis.nex configs/pbs/mbgpu_mpi.sh
#
# SETUP holds the data, the model and `mcmcp ... filename=STEM checkpoint=yes ...;` but no `mcmc`.
#PBS -N mbgpu
#PBS -l select=2:ncpus=16:ngpus=4:mpiprocs=4
#PBS -l walltime=24:00:00
#PBS -j oe

set -u
cd "$PBS_O_WORKDIR"
SETUP=${SETUP:?qsub -v SETUP=FILE.nex mbgpu_mpi.sh}
WALL=${MBGPU_WALLTIME_S:-86400}        # keep equal to walltime above (seconds)
STEM=${MBGPU_STEM:-$(sed -n 's/.*filename=\([^ ;]*\).*/\1/Ip' "$SETUP" | tail -1)}
LEFT=${MBGPU_RESUBMITS:-10}
NP=$(wc -l < "$PBS_NODEFILE")         # mpiprocs x nodes

MODE=""
[ -f "$STEM.ckp.h5" ] && MODE="append=yes"
RUN="run-$STEM-${PBS_JOBID%%.*}.nex"
printf '#NEXUS\nbegin mrbayes;\n  set autoclose=yes;\n  execute %s;\n  mcmc %s;\nend;\n' "$SETUP" "$MODE" > "$RUN"

# PBS has no "signal before the limit": timeout sends USR1 to mpiexec 300 s before the walltime and
# mpiexec forwards it to every rank (MPICH's hydra does; Open MPI 4.1.6's mpirun did not in our test,
# see docs/hpc.md). Each rank sees all GPUs of its node and takes the one of its local rank (or MBGPU_DEVICE).
timeout --preserve-status --signal=USR1 --kill-after=240 $((WALL - 300)) \
    mpiexec -np "$NP" --hostfile "$PBS_NODEFILE" mbgpu "$RUN"
RC=$?

if [ "$RC" -eq 138 ] && [ "$LEFT" -gt 0 ]; then
  qsub -v SETUP="$SETUP",MBGPU_STEM="$STEM",MBGPU_RESUBMITS=$((LEFT - 1)),MBGPU_WALLTIME_S="$WALL" \
       "$PBS_O_WORKDIR/configs/pbs/mbgpu_mpi.sh"
fi
exit "$RC"
