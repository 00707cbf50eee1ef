#!/bin/bash
# mbgpu on a PBS Pro / OpenPBS cluster (Torque: see the nodes= line): one MPI rank per GPU, a checkpoint
# 5 minutes before the walltime, then a new job continues from it with `mcmc append=yes`.
# docs/hpc.md explains each line.
#
#   cd /my/analysis && qsub -v SETUP=SETUP.nex /path/to/mbgpu_mpi.sh
#
# SETUP.nex (relative to the directory you submit from, where every output goes) holds the data, the model
# and `mcmcp ... filename=STEM checkpoint=yes checkfreq=1000;` but no `mcmc` command: the job runs `mcmc;`,
# or `mcmc append=yes;` when STEM.ckp.h5 exists.  Ranks = lines of $PBS_NODEFILE = chunks x mpiprocs,
# at most nruns x nchains (x sitesplit).  qsub does not pass your shell's environment to the job: load the
# MPI and activate the environment in the site setup lines below, or add MBGPU_PYTHON=/venv/bin/python to -v.
#
# Edit the header: remove one '#' from the queue/account lines and fill them in if your site needs them.
# One chunk = one node with 4 GPUs and 4 ranks (keep mpiprocs = ngpus); more nodes: select=2:...
# Torque instead of PBS Pro: put '#' before the select line and remove one '#' from the nodes= line.
#PBS -N mbgpu
##PBS -q QUEUE
##PBS -A ACCOUNT
#PBS -l select=1:ncpus=16:ngpus=4:mpiprocs=4
##PBS -l nodes=1:ppn=4:gpus=4
#PBS -l walltime=24:00:00
#PBS -j oe
#PBS -r y

# --- site setup: the MPI mpi4py was built against, and the environment holding mbgpu ---
# module load openmpi
# source "$HOME/venvs/mbgpu/bin/activate"
# export XDG_CACHE_HOME=/shared/cache  # compiled kernels go to $XDG_CACHE_HOME/mbgpu (default ~/.cache/mbgpu)

set -u
die() { echo "mbgpu job: $*" >&2; exit 2; }

cd "${PBS_O_WORKDIR:?submit this script with qsub}" || exit 2
SETUP=${1:-${SETUP:-}}
[ -n "$SETUP" ] || die "usage: qsub -v SETUP=SETUP.nex JOB_SCRIPT (SETUP.nex relative to the submit directory)"
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

NP=$(( $(wc -l < "${PBS_NODEFILE:?submit this script with qsub}") ))
PY=${MBGPU_PYTHON:-python3}
INFO=$("$PY" -c 'import mpi4py, mbgpu.version as v; mpi4py.rc.initialize = False; from mpi4py import MPI
print("mbgpu %s, mpi4py %s, MPI: %s" % (v.__version__, mpi4py.__version__, MPI.Get_library_version().splitlines()[0].strip()))' 2>&1) ||
  die "'$PY' cannot import mbgpu and mpi4py (activate the environment or set MBGPU_PYTHON): ${INFO##*$'\n'}"
# The cluster's mpirun, not the one the mpich wheel puts beside python (docs/hpc.md, "Installing").
MPIRUN=${MBGPU_MPIRUN:-$(command -v mpirun || command -v mpiexec)}
[ -n "$MPIRUN" ] || die "no mpirun on PATH: load the cluster's MPI in the site setup lines, or set MBGPU_MPIRUN"
if [ -z "${MBGPU_MPIRUN:-}" ] && [ "$(dirname "$MPIRUN")" = "$(dirname "$(command -v "$PY")")" ]; then
  die "$MPIRUN is the mpich wheel's (mbgpu[mpich]), not the cluster's: 'pip uninstall mpich' here and load the" \
      "cluster's MPI (docs/hpc.md), or set MBGPU_MPIRUN=$MPIRUN to use it anyway"
fi

# Seconds of walltime: MBGPU_WALLTIME_S, else Torque's PBS_WALLTIME, else PBS Pro's qstat -f.
seconds() { local IFS=: s=0 f; for f in $1; do s=$(( s * 60 + 10#$f )); done; echo "$s"; }
WALL=${MBGPU_WALLTIME_S:-${PBS_WALLTIME:-$(seconds "$(qstat -f "$PBS_JOBID" 2>/dev/null |
      sed -n 's/^[[:space:]]*Resource_List.walltime = //p' | head -1)")}}
STOP_AT=$(( WALL - ${MBGPU_STOP_BEFORE_S:-300} - SECONDS ))

MODE=""
if [ -f "$STEM.ckp.h5" ] || [ -f "$STEM.ckp.h5~" ]; then MODE="append=yes"; fi
RUN=$PWD/mbgpu-run-${STEM##*/}-${PBS_JOBID%%.*}.nex
q="'"   # NEXUS quoting: the path in single quotes, a quote inside doubled
printf "#NEXUS\nbegin mrbayes;\n  set autoclose=yes;\n  execute '%s';\n  mcmc %s;\nend;\n" "${SETUP//$q/$q$q}" "$MODE" > "$RUN"
LEFT=${MBGPU_RESUBMITS:-10}
echo "mbgpu job $PBS_JOBID: $NP ranks in $PWD; mcmc ${MODE:-(new run)}; $INFO; $MPIRUN:" \
     "$("$MPIRUN" --version 2>&1 | head -2 | tr -s ' \n' ' ')"
[ "$STOP_AT" -gt 0 ] || echo "mbgpu job: walltime unknown or too short (${WALL}s): no checkpoint before it" >&2

# PBS has no "signal before the limit": a timer signals this shell STOP_AT seconds from now.  Not every
# mpirun forwards signals to its ranks (Open MPI 4.1.6's did not in our test), so this shell sends USR1
# (and the SIGTERM that PBS sends before killing the job) to the mbgpu processes below mpirun on this
# node, rank 0 among them: when any rank gets it every rank stops at its next stop check, rank 0
# writes STEM.ckp.h5 and mbgpu exits with 138 (143 after SIGTERM, which is not resubmitted).
stop_ranks() {  # SIGNAL PID
  local k
  for k in $(ps -o pid= --ppid "$2" 2>/dev/null); do
    case $(ps -o args= -p "$k" 2>/dev/null) in *mbgpu.mpi*) kill -"$1" "$k" 2>/dev/null ;; *) stop_ranks "$1" "$k" ;; esac
  done
}
STOPPED=0 PID="" TIMER=""
trap 'STOPPED=1; [ -n "$PID" ] && stop_ranks USR1 "$PID"' USR1
trap '[ -n "$PID" ] && stop_ranks TERM "$PID"' TERM
"$MPIRUN" -np "$NP" "${MBGPU_HOSTFILE_FLAG:---hostfile}" "$PBS_NODEFILE" "$PY" -m mbgpu.mpi "$RUN" &
PID=$!
if [ "$STOP_AT" -gt 0 ]; then
  ( trap 'kill "$S" 2>/dev/null; exit 0' TERM; sleep "$STOP_AT" & S=$!; wait "$S" && kill -USR1 $$ ) &
  TIMER=$!
fi
wait "$PID"; RC=$?
while kill -0 "$PID" 2>/dev/null; do wait "$PID"; RC=$?; done   # `wait` returns early when a trap runs
[ -z "$TIMER" ] || kill "$TIMER" 2>/dev/null

if [ "$RC" -eq 138 ] || { [ "$STOPPED" = 1 ] && [ "$RC" -ne 0 ] && [ "$STEM.ckp.h5" -nt "$RUN" ]; }; then
  SCRIPT=${MBGPU_SCRIPT:-$0}
  if [ "$LEFT" -le 0 ]; then
    echo "mbgpu job: resubmitted MBGPU_RESUBMITS times already; submit again to continue" >&2
  elif [ ! -r "$SCRIPT" ]; then
    echo "mbgpu job: cannot read this job script ('$SCRIPT') to resubmit it: submit again with" \
         "-v SETUP=...,MBGPU_SCRIPT=/path/to/mbgpu_mpi.sh" >&2
  else
    VARS=SETUP=$SETUP,MBGPU_RESUBMITS=$((LEFT - 1))
    for v in MBGPU_PYTHON MBGPU_MPIRUN MBGPU_HOSTFILE_FLAG MBGPU_STEM MBGPU_SCRIPT MBGPU_STOP_BEFORE_S \
             MBGPU_WALLTIME_S; do
      [ -z "${!v:-}" ] || VARS=$VARS,$v=${!v}
    done
    echo "mbgpu job: stopped before the walltime with checkpoint $STEM.ckp.h5; submitting the continuation"
    qsub -W depend=afterany:"$PBS_JOBID" -v "$VARS" "$SCRIPT" ||
      echo "mbgpu job: qsub failed; submit the same command again to continue from the checkpoint" >&2
  fi
fi
exit "$RC"
