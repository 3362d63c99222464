#!/usr/bin/env bash
# ckpt_stress: crash safety under many SIGKILLs (the CI test,
# test/Checkpoint/crash.test, runs 8). CKPT_STRESS_TRIALS (40) runs of a
# 1-layer GPT saving every step are killed at random moments (0-250 ms
# after their first commit), CKPT_STRESS_PARALLEL (4) at a time, plus one
# run per crash point of the commit protocol; every `latest` must pass
# `ds-ckpt verify`, and one run is resumed from its `latest`.
# CKPT_STRESS_SEED fixes the random moments (default: drawn, printed).
# One JSON line: {"bench": "ckpt_stress", "trials": N, "failures": F}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_ckpt=$(ds_tool ds-ckpt)
trials=${CKPT_STRESS_TRIALS:-40}
parallel=${CKPT_STRESS_PARALLEL:-4}
seed=${CKPT_STRESS_SEED:-$RANDOM}
inputs=$here/../test/Checkpoint/Inputs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=0 failures=0
points=shard-written,shard-renamed,manifest-written,latest-written
for ((done_ = 0; done_ < trials; done_ += parallel)); do
  n=$(( trials - done_ < parallel ? trials - done_ : parallel ))
  mkdir -p "$tmp/$done_"
  out=$("$PYTHON" "$inputs/crash_trials.py" "$ds_train" "$ds_ckpt" \
        "$tmp/$done_" "$points" "$n" $((seed + done_)) -- \
        --model "$inputs/gpt-1layer.json" --config "$inputs/sgd.json" \
        --synthetic || true)
  echo "$out" | grep -v ': ok$' >&2 || true
  line=$(echo "$out" | tail -1)
  runs=$(( runs + $(echo "$line" | awk '{print $1}') ))
  failures=$(( failures + $(echo "$line" | awk '{print $4}') ))
  points=  # the fixed crash points once
  rm -rf "$tmp/$done_"
done
echo "{\"bench\": \"ckpt_stress\", \"trials\": $runs, \"failures\": $failures, \"seed\": $seed}"
[ "$failures" -eq 0 ]
