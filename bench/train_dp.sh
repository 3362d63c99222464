#!/usr/bin/env bash
# train_dp: data-parallel training of the train_single bench GPT (n_layer 4,
# n_embd 256, n_head 4, n_positions 128, vocab 4096, fp32, AdamW) at DP=2:
# micro-batch 4 per rank, global batch 8, 2 processes x BENCH_THREADS (1)
# thread(s); global tokens/s, ds vs PyTorch over gloo.
#   ds:       ds-launch --num_procs 2 -- ds-train --model train_single/gpt.json
#             --config train_dp/ds_config.json with zero_optimization.stage
#             0, 1, 2, 3 --synthetic; rank 0's JSONL tokens_per_s (global
#             batch x seq / step time; compile + JIT happen before step 1 and
#             are not timed)
#   baseline: train_dp/torch_dp.py (the train_single torch GPT module):
#             ddp   = DistributedDataParallel + AdamW(foreach)      vs ZeRO 0
#             zero1 = DDP + ZeroRedundancyOptimizer(AdamW, foreach) vs ZeRO 1, 2, 3
#             rank 0 times each step itself (batch, forward, backward with
#             DDP's all-reduce, clip_grad_norm_, optimizer step)
# Every run drops TRAIN_DP_SKIP (3) warm-up steps, then measures
# TRAIN_DP_REPEATS (3) windows of TRAIN_DP_STEPS (10) steps; a window's
# tokens/s is global tokens / its median step time. Each ds run is bracketed
# by torch runs of its baseline:
#   torch ddp, ds 0, torch ddp, torch zero1, ds 1, torch zero1, ds 2,
#   torch zero1, ds 3, torch zero1
# and each ratio compares ds's best window with the best window of the two
# torch runs around it (the machine is shared and its load drifts; ranges of
# all windows go to stderr). A ds-train launch compiles for 25 s (idle) to
# 100+ s (loaded) before step 1, so ds repeats are windows of one run rather
# than separate launches; the bench takes ~4 min on an idle machine.
#
# One JSON line per ZeRO stage, metric "global_tokens_per_s_zero<S>".
# Environment: TRAIN_DP_STAGES ("0 1 2 3"), TRAIN_DP_SKIP, TRAIN_DP_STEPS,
# TRAIN_DP_REPEATS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
spec=$here/train_single/gpt.json
config=$here/train_dp/ds_config.json
stages=${TRAIN_DP_STAGES:-"0 1 2 3"}
skip=${TRAIN_DP_SKIP:-3}
window=${TRAIN_DP_STEPS:-10}
repeats=${TRAIN_DP_REPEATS:-3}
steps=$((skip + window * repeats))
ranks=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GLOO_SOCKET_IFNAME=${GLOO_SOCKET_IFNAME:-lo}

# windows FILE FIELD: tokens/s of each measured window of a per-step JSONL,
# space-separated (FIELD step_ms: global tokens / median; tokens_per_s: the
# median of ds-train's own per-step figure, the same thing).
windows() {
  "$PYTHON" - "$1" "$2" "$skip" "$window" "$repeats" "$spec" "$config" <<'PY'
import json, statistics, sys
path, field = sys.argv[1:3]
skip, w, r = map(int, sys.argv[3:6])
spec, cfg = (json.load(open(p)) for p in sys.argv[6:8])
rows = [json.loads(l) for l in open(path) if l.strip()]
assert len(rows) >= skip + w * r, f"{path}: {len(rows)} steps, want {skip + w * r}"
tokens = cfg["train_batch_size"] * spec["n_positions"]
out = []
for i in range(r):
    win = rows[skip + i * w:skip + (i + 1) * w]
    if field == "step_ms":
        out.append(tokens / (statistics.median(x["step_ms"] for x in win) / 1e3))
    else:
        out.append(statistics.median(x[field] for x in win))
print(" ".join(f"{v:.1f}" for v in out))
PY
}

# Stage-S configs: the bench config with zero_optimization.stage = S.
for s in $stages; do
  "$PYTHON" - "$config" "$s" "$tmp/zero$s.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg.setdefault("zero_optimization", {})["stage"] = int(sys.argv[2])
json.dump(cfg, open(sys.argv[3], "w"), indent=1)
PY
done

# run_torch MODE N: torch run N (windows in $tmp/torch_N.windows).
run_torch() {
  local mode=$1 n=$2 out=$tmp/torch_$2.jsonl
  if ! baseline_python "$here/train_dp/torch_dp.py" "$mode" "$spec" "$config" \
    "$BENCH_THREADS" "$steps" "$out" >"$tmp/torch_$n.log" 2>&1; then
    cat "$tmp/torch_$n.log" >&2
    echo "train_dp: torch $mode failed" >&2
    exit 1
  fi
  windows "$out" step_ms >"$tmp/torch_$n.windows"
  "$PYTHON" - "$out" "$(cat "$tmp/torch_$n.windows")" "$(cut -d' ' -f1 /proc/loadavg)" "$mode" <<'PY' >&2
import json, sys
path, wins, load, mode = sys.argv[1:5]
rows = [json.loads(l) for l in open(path) if l.strip()]
print(f"train_dp: torch {mode}: tokens/s per window {wins} (loss {rows[0]['loss']:.4f}"
      f" -> {rows[-1]['loss']:.4f}; load {load})")
PY
}

run_ds() { # STAGE
  local s=$1 out=$tmp/ds_$1.jsonl
  if ! "$ds_launch" --num_procs "$ranks" -- "$ds_train" --model "$spec" \
    --config "$tmp/zero$s.json" --synthetic --steps "$steps" \
    --metrics "$out" >"$tmp/ds_$s.log" 2>&1; then
    cat "$tmp/ds_$s.log" >&2
    echo "train_dp: ds-train (ZeRO $s, $ranks ranks) failed" >&2
    exit 1
  fi
  windows "$out" tokens_per_s >"$tmp/ds_$s.windows"
  "$PYTHON" - "$out" "$skip" "$(grep -oE '(compiled|loaded|compile cache hit)[^;]* in [0-9.]* s' "$tmp/ds_$s.log" | head -1)" \
    "$(cat "$tmp/ds_$s.windows")" "$(cut -d' ' -f1 /proc/loadavg)" "$s" <<'PY' >&2
import json, statistics, sys
path, skip, compiled, wins, load, s = sys.argv[1:7]
rows = [json.loads(l) for l in open(path) if l.strip()]
m = rows[int(skip):]
print(f"train_dp: ds ZeRO {s}: tokens/s per window {wins} (loss {rows[0]['loss']:.4f}"
      f" -> {rows[-1]['loss']:.4f}; comm {statistics.median(r['comm_ms'] for r in m):.1f}"
      f" of {statistics.median(r['step_ms'] for r in m):.1f} ms/step; model states"
      f" {rows[-1]['model_state_bytes'] / 1e6:.1f} MB/rank; {compiled}; load {load})")
PY
}

# lr_check DS_JSONL TORCH_JSONL: same WarmupLR schedule on both sides.
lr_check() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
bad = [(x["step"], x["lr"], y["lr"]) for x, y in zip(a, b)
       if abs(x["lr"] - y["lr"]) > 1e-6 * max(1e-12, abs(y["lr"])) + 1e-12]
if bad:
    sys.exit(f"train_dp: lr schedules differ (step, ds, torch): {bad[:3]}")
PY
}

# best_range FILE...: "best min max" over all windows in the files.
best_range() {
  cat "$@" | tr ' ' '\n' | grep . | sort -g | awk 'NR==1{lo=$1} {hi=$1} END{print hi, lo, hi}'
}

# Each ds run is bracketed by torch runs of its baseline (a zero1 run between
# two ds stages serves both): compared windows lie within a minute of each
# other, however the load of the machine drifts over the whole bench.
n=0 last=
declare -A before after mode_of
for s in $stages; do
  if [ "$s" = 0 ]; then mode=ddp; else mode=zero1; fi
  mode_of[$s]=$mode
  if [ "$last" != "$mode" ]; then
    run_torch "$mode" $n
    n=$((n + 1))
  fi
  before[$s]=$((n - 1))
  run_ds "$s"
  run_torch "$mode" $n
  after[$s]=$n
  n=$((n + 1)) last=$mode
done

torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)')
for s in $stages; do
  mode=${mode_of[$s]}
  if [ "$mode" = ddp ]; then
    name="torch $torch_version DDP (gloo, ${ranks}x$BENCH_THREADS thread)"
  else
    name="torch $torch_version DDP + ZeroRedundancyOptimizer (ZeRO-1, gloo, ${ranks}x$BENCH_THREADS thread)"
  fi
  lr_check "$tmp/ds_$s.jsonl" "$tmp/torch_${after[$s]}.jsonl"
  read -r ds ds_lo ds_hi < <(best_range "$tmp/ds_$s.windows")
  read -r base base_lo base_hi < <(best_range "$tmp/torch_${before[$s]}.windows" "$tmp/torch_${after[$s]}.windows")
  echo "train_dp: ZeRO $s: ds best $ds (windows $ds_lo-$ds_hi), torch $mode best $base" \
    "(windows $base_lo-$base_hi, runs before and after) global tokens/s" >&2
  bench_json train_dp "global_tokens_per_s_zero$s" "$ds" "$base" "$name" 1
done
