#!/usr/bin/env bash
# startup: time from process start to the end of the first training step,
# and peak RSS through it, for the bench GPT (bench/train_single/gpt.json:
# n_embd 256, n_head 4, T 128, vocab 4096, micro-batch 4, fp32, AdamW,
# clipping) at several depths, ds vs PyTorch eager, one process, same
# threads.
#   ds:       ds-train --synthetic --steps 1: import, the training pipeline,
#             lowering and the JIT (LLVM O3), init, one step
#   baseline: train_single/torch_train.py ... 1: import torch, build the
#             model, one eager step (torch compiles nothing)
# One JSON line per depth, metric "first_step_s@n_layer=N" (lower is
# better), then "depth_scaling" = t(deepest) / t(shallowest) for each side:
# compile once per distinct layer makes ds's close to 1.
# STARTUP_LAYERS (default "2 8 24 96") picks the depths; the peak RSS of
# each run goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
layers=${STARTUP_LAYERS:-2 8 24 96}
config=$here/train_single/ds_config.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "bench: startup, $BENCH_THREADS thread(s) for ds and torch alike" >&2

# timed OUT CMD...: runs CMD, writes "seconds peak_kb" to OUT.
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out" "$@" >"$out.log" 2>&1 ||
    { cat "$out.log" >&2; exit 1; }
}

first="" last=""
for n in $layers; do
  spec=$tmp/gpt$n.json
  "$PYTHON" - "$here/train_single/gpt.json" "$n" "$spec" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["n_layer"] = int(sys.argv[2])
json.dump(spec, open(sys.argv[3], "w"))
PY
  timed "$tmp/ds$n" "$ds_train" --model "$spec" --config "$config" \
    --synthetic --steps 1 --quiet
  OPENBLAS_CORETYPE=$bench_blas_core timed "$tmp/torch$n" "$PYTHON" \
    "$here/train_single/torch_train.py" "$spec" "$config" "$BENCH_THREADS" 1 \
    "$tmp/torch$n.jsonl"
  read -r ds_s ds_kb <"$tmp/ds$n"
  read -r torch_s torch_kb <"$tmp/torch$n"
  echo "bench: n_layer $n: ds ${ds_s} s, peak RSS $((ds_kb / 1024)) MB;" \
    "torch ${torch_s} s, peak RSS $((torch_kb / 1024)) MB" >&2
  bench_json startup "first_step_s@n_layer=$n" "$ds_s" "$torch_s" \
    "torch eager" 0
  [ -n "$first" ] || first=$n
  last=$n
done
if [ "$first" != "$last" ]; then
  read -r ds_a _ <"$tmp/ds$first"
  read -r ds_b _ <"$tmp/ds$last"
  read -r torch_a _ <"$tmp/torch$first"
  read -r torch_b _ <"$tmp/torch$last"
  scaling() { "$PYTHON" -c "print($2 / $1)"; }
  bench_json startup "depth_scaling@n_layer=$first..$last" \
    "$(scaling "$ds_a" "$ds_b")" "$(scaling "$torch_a" "$torch_b")" \
    "torch eager" 0
fi
