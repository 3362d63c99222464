#!/usr/bin/env bash
# Runs every test suite: lit (hermetic + integration) then ctest (GoogleTest).
# Exits non-zero if either fails; both always run so both summaries print.
# Usage: scripts/run-tests.sh [BUILD] [sanitize]
set -u
build=${1:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ "${2:-}" = sanitize ]; then
  # make test-sanitize: any report fails its test. Leaks inside Open MPI and
  # Debian's LLVM (not instrumented, freed at exit or never) are suppressed.
  here=$(cd "$(dirname "$0")" && pwd)
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_odr_violation=0:allow_user_poisoning=0
  export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Absolute: tests run in directories of their own.
  shim=$(cd "$build" && pwd)/lib/keep-dlopen.so
  cc -shared -fPIC -O2 -o "$shim" "$here/keep-dlopen.c" || exit 1
  export LD_PRELOAD=$shim
fi
start=$(date +%s)
status=0
echo "== lit =="
/usr/lib/llvm-22/bin/lit -v "$build/test" || status=1
echo "== ctest =="
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" || status=1
echo "wall time: $(( $(date +%s) - start )) s"
if [ $status -ne 0 ]; then echo "make test: FAILED"; else echo "make test: all suites passed"; fi
exit $status
