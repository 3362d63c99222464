#!/usr/bin/env bash
# Runs every test suite: lit (hermetic + integration) then ctest (GoogleTest).
# Exits non-zero if either fails; both always run so both summaries print.
set -u
build=${1:-build}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
echo "== lit =="
/usr/lib/llvm-22/bin/lit -v "$build/test" || status=1
echo "== ctest =="
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" || status=1
if [ $status -ne 0 ]; then echo "make test: FAILED"; else echo "make test: all suites passed"; fi
exit $status
