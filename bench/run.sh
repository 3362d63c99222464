#!/usr/bin/env bash
# bench/run.sh NAME [ARGS...] — run one benchmark (bench/NAME.sh).
#
# Convention (all issues): every comparison prints one JSON line
#   {"bench": NAME, "metric": ..., "ds": x, "baseline": y,
#    "baseline_name": ..., "ratio": r}
# with ratio > 1 meaning ds is better, both sides measured in the same run,
# with the same thread count: BENCH_THREADS (default 1) pins OpenMP and
# OpenBLAS for ds and the baseline alike (oversubscribing the cores halves
# both). Diagnostics go to stderr; stdout is only the JSON lines.
#
# Environment: DS_BUILD (default: build next to this folder), BENCH_THREADS,
# PYTHON (default /usr/bin/python3: Debian's, the one that imports torch).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ] || [ ! -x "$here/$1.sh" ]; then
  echo "usage: bench/run.sh NAME [ARGS...]; benchmarks:" \
    $(cd "$here" && ls *.sh | grep -v -e '^run.sh$' -e '^lib.sh$' | sed 's/\.sh$//') >&2
  exit 2
fi
name=$1
shift
export DS_BUILD=${DS_BUILD:-$here/../build}
export BENCH_THREADS=${BENCH_THREADS:-1}
export OMP_NUM_THREADS=$BENCH_THREADS OPENBLAS_NUM_THREADS=$BENCH_THREADS
export MKL_NUM_THREADS=$BENCH_THREADS
export PYTHON=${PYTHON:-/usr/bin/python3}
exec "$here/$name.sh" "$@"
