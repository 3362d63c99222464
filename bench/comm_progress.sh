#!/usr/bin/env bash
# comm_progress: does a started all-gather move its bytes while the rank
# computes? An all-gather of N MiB (libdsrt, mpi backend) overlapped with
# sgemms of about the same duration, 2 ranks, BENCH_THREADS BLAS threads
# each (default 1: 2 ranks on a 2-core machine). Three JSON lines, one run:
#   overlapped vs comm + compute       (ratio 2 = all of it hidden)
#   overlapped vs max(comm, compute)   (ratio 1 = perfect overlap)
#   overlapped vs the same with libdsrt's progress thread off
#                                      (DSRT_COMM_PROGRESS_US=0)
# Environment: COMM_PROGRESS_MIB (64), COMM_PROGRESS_RANKS (2),
# COMM_PROGRESS_BTL (Open MPI transports; default "self,vader", shared
# memory; "self,tcp" under scripts/multihost/two-hosts.sh for a wire),
# COMM_PROGRESS_MPIRUN_ARGS (extra mpirun arguments, e.g. a hostfile).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc_dsrt "$here/comm_progress/comm_progress.c" "$tmp/comm_progress"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OPENBLAS_CORETYPE=$bench_blas_core
echo "bench: ${COMM_PROGRESS_RANKS:-2} ranks, $BENCH_THREADS OpenBLAS" \
  "thread(s) per rank ($bench_blas_core) + libdsrt's progress thread," \
  "btl ${COMM_PROGRESS_BTL:-self,vader}" >&2
export COMM_PROGRESS_MIB=${COMM_PROGRESS_MIB:-64} COMM_PROGRESS_K=
export DSRT_COMM_PROGRESS_US=${DSRT_COMM_PROGRESS_US:-250}
run() {
  # Ranks unbound: each rank's progress thread may run on the other core.
  mpirun --oversubscribe --bind-to none -n "${COMM_PROGRESS_RANKS:-2}" \
    --mca btl "${COMM_PROGRESS_BTL:-self,vader}" \
    ${COMM_PROGRESS_MPIRUN_ARGS:-} -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS \
    -x OPENBLAS_CORETYPE -x COMM_PROGRESS_MIB -x COMM_PROGRESS_K \
    -x DSRT_COMM_PROGRESS_US "$tmp/comm_progress"
}
# "overlap comm compute k"; the run without the thread repeats k.
read -r overlap comm compute k < <(run)
read -r off _ _ _ < <(DSRT_COMM_PROGRESS_US=0 COMM_PROGRESS_K=$k run)
metric="seconds@all_gather_${COMM_PROGRESS_MIB}MiB"
bench_json comm_progress "$metric" "$overlap" \
  "$("$PYTHON" -c "print($comm + $compute)")" "sum comm + compute" 0
bench_json comm_progress "$metric" "$overlap" \
  "$("$PYTHON" -c "print(max($comm, $compute))")" "ideal max(comm, compute)" 0
bench_json comm_progress "$metric" "$overlap" "$off" \
  "same without the progress thread" 0
