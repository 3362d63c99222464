#!/usr/bin/env bash
# collectives: libdsrt all_reduce / all_gather / reduce_scatter (mpi
# backend) vs the same MPI calls made directly, f32, bus bandwidth in GB/s,
# one JSON line per (collective, size).
#   ds:       dsrt_all_reduce, dsrt_all_gather, dsrt_reduce_scatter (MPI_I*
#             calls under the timed wait that guards against dead peers)
#   baseline: MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block
# Both from one program under mpirun (collectives/collectives.c, built here
# with mpicc against $DS_BUILD/lib/libdsrt.so), calls interleaved, median of
# several repeats per side.
# Environment: COLLECTIVES_RANKS (2), COLLECTIVES_SIZES_MIB ("1 4 16 64"),
# COLLECTIVES_BTL (Open MPI transports, "self,vader": shared memory).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc_dsrt "$here/collectives/collectives.c" "$tmp/collectives"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export COLLECTIVES_SIZES_MIB=${COLLECTIVES_SIZES_MIB:-"1 4 16 64"}
mpirun --oversubscribe -n "${COLLECTIVES_RANKS:-2}" \
  --mca btl "${COLLECTIVES_BTL:-self,vader}" "$tmp/collectives"
