#!/bin/sh
# must-fail-in-time.sh OUT SECONDS CMD... — runs CMD with its output in OUT;
# succeeds only if CMD exits non-zero before SECONDS (a hang is a failure).
out=$1 limit=$2
shift 2
timeout "$limit" "$@" > "$out" 2>&1
rc=$?
if [ $rc -eq 124 ]; then echo "hung: still running after ${limit}s" >&2; exit 1; fi
if [ $rc -eq 0 ]; then echo "unexpectedly succeeded" >&2; exit 1; fi
exit 0
