#!/bin/bash
# mbgpu with site decomposition for data too large for one GPU: each chain group spans K GPUs that
# split the site patterns (set sitesplit=K in SETUP.nex).  16 tasks with sitesplit=2 run 8 chain
# groups of 2 GPUs each.  Checkpoint and resubmission as in mbgpu_mpi.sh (which this calls).
#
#   sbatch configs/slurm/mbgpu_sitesplit.sh SETUP.nex        (SETUP.nex: ... set sitesplit=2; ... mcmcp ...;)
#SBATCH --job-name=mbgpu-split
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-task=1
#SBATCH --cpus-per-task=2
#SBATCH --time=24:00:00
#SBATCH --signal=B:USR1@300
#SBATCH --output=mbgpu-%x-%j.out
#SBATCH --open-mode=append

export MBGPU_SCRIPT=${MBGPU_SCRIPT:-$SLURM_SUBMIT_DIR/configs/slurm/mbgpu_sitesplit.sh}
source "$SLURM_SUBMIT_DIR/configs/slurm/mbgpu_mpi.sh" "$@"
