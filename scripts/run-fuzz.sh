#!/usr/bin/env bash
# Runs every libFuzzer target of test/fuzz for SECONDS each (make fuzz
# FUZZ_SECONDS=N), starting from the committed seeds and regressions, and
# prints executions and crashes per target. Crashing inputs land in
# BUILD/fuzz/TARGET/ (crash-*, leak-*, oom-*, timeout-*): fix the reader,
# then copy the input into test/fuzz/regressions/TARGET/.
# With FUZZ_RUNS=N (make fuzz FUZZ_RUNS=N) a target stops after N
# executions, or at SECONDS, whichever comes first.
# Usage: [FUZZ_RUNS=N] scripts/run-fuzz.sh BUILD SECONDS [TARGET...]
set -u
build=$1 seconds=$2 runs=${FUZZ_RUNS:-0}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)/test/fuzz
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(config model-spec mlir safetensors
  checkpoint npy hostfile tokens pt2)
# LLVM's BumpPtrAllocator poisons the slabs it hands out when compiled
# under ASan; libMLIR is not, so a slab the instrumented ds code started
# and libMLIR fills (the context's attribute storage) reads as poisoned.
# Manual poisoning is off; ASan still checks every real allocation.
export ASAN_OPTIONS="allow_user_poisoning=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
status=0
summary=""
for t in "${targets[@]}"; do
  work=$build/fuzz/$t
  mkdir -p "$work/corpus"
  dict=()
  [ -f "$src/dicts/$t.dict" ] && dict=(-dict="$src/dicts/$t.dict")
  log=$work/fuzz.log
  touch "$work/.started" # crashing inputs of this run are newer
  # The corpus grows in $work/corpus; seeds and regressions are read only.
  "$build/bin/ds-fuzz-$t" "$work/corpus" "$src/corpus/$t" \
    "$src/regressions/$t" "${dict[@]}" -max_total_time="$seconds" \
    $([ "$runs" -gt 0 ] && echo "-runs=$runs") \
    -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$work/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
    grep -o '[0-9]*$' | tail -1)
  found=$(find "$work" -maxdepth 1 -newer "$work/.started" \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' \
    -o -name 'timeout-*' -o -name 'slow-unit-*' \) | wc -l)
  line="$t: ${execs:-?} executions, exit $rc, $found crashing inputs in $work"
  echo "$line"
  summary+="$line"$'\n'
  [ $rc -ne 0 ] && status=1
done
echo "== make fuzz =="
printf '%s' "$summary"
exit $status
