#!/usr/bin/env bash
# train_tp: tensor parallelism on 2 ranks (issue "Tensor parallelism", item
# 7). The model is wide, so its layers are worth cutting: GPT n_layer 4,
# n_embd 1024 (MLP 4096), 16 heads, sequence 128, vocabulary 4096 (tied),
# fp32 AdamW, global batch 8, BENCH_THREADS (1) thread per rank:
#   one rank  ds-train, micro-batch 8
#   DP=2      ds-launch -n 2, ZeRO-0, micro-batch 4 per rank
#   TP=2      ds-launch -n 2, tensor_parallel.autotp_size 2 (one data-
#             parallel rank: both ranks read the same micro-batch of 8)
# All three are ds: the layouts are the comparison the issue asks for. Each
# run drops TRAIN_TP_SKIP (3) warm-up steps and measures TRAIN_TP_STEPS
# (10); tokens/s is the median of ds-train's per-step global figure.
# Metrics (JSON lines, bench convention):
#   tokens_per_s@tp2_vs_dp2, tokens_per_s@tp2_vs_one_rank
#   model_state_bytes_per_rank@tp2_vs_dp2 (lower is better)
#   comm_share@tp2 (the TP all-reduces' share of the step, against DP=2's
#                   gradient all-reduce share; lower is better)
#   params_that_fit@tp2_vs_dp2: the deepest model of this width whose
#     planned per-rank peak (ds-plan-memory, what ds-train checks against
#     the machine before compiling) keeps both ranks within TRAIN_TP_MEM_GIB
#     (default 90% of MemTotal); the plan is affine in depth, so it is read
#     at depths 2 and 4 and extrapolated. With TRAIN_TP_VERIFY=1 the TP=2
#     model found is then trained for 2 steps to show it fits.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
spec=$here/train_tp/gpt.json
config=$here/train_tp/ds_config.json
skip=${TRAIN_TP_SKIP:-3}
window=${TRAIN_TP_STEPS:-10}
steps=$((skip + window))
budget=$(mem_budget_bytes "${TRAIN_TP_MEM_GIB:-}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}

# layout NAME DEPTH: writes $tmp/NAME-DEPTH.{json,spec.json} and prints the
# process count.
layout() {
  "$PYTHON" - "$config" "$spec" "$1" "$2" "$tmp/$1-$2" <<'PY'
import json, sys
cfg, spec = (json.load(open(p)) for p in sys.argv[1:3])
name, depth, out = sys.argv[3], int(sys.argv[4]), sys.argv[5]
if name == "tp2":
    cfg["tensor_parallel"] = {"autotp_size": 2}
spec["n_layer"] = depth
json.dump(cfg, open(out + ".json", "w"), indent=1)
json.dump(spec, open(out + ".spec.json", "w"), indent=1)
print(1 if name == "one" else 2)
PY
}

# run NAME DEPTH STEPS: trains the layout, metrics in $tmp/NAME-DEPTH.jsonl.
run() {
  local name=$1 depth=$2 n base=$tmp/$1-$2
  n=$(layout "$name" "$depth")
  if ! "$ds_launch" --num_procs "$n" -- "$ds_train" --model "$base.spec.json" \
    --config "$base.json" --synthetic --steps "$3" --metrics "$base.jsonl" \
    >"$base.log" 2>&1; then
    cat "$base.log" >&2
    echo "train_tp: ds-train ($name, $depth layers) failed" >&2
    exit 1
  fi
}

# summary FILE: "tokens/s comm_share model_state_bytes planned_peak loss1 lossN"
summary() {
  "$PYTHON" - "$1" "$skip" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = rows[int(sys.argv[2]):] or rows
print(statistics.median(r["tokens_per_s"] for r in m),
      statistics.median(r["comm_ms"] / r["step_ms"] for r in m),
      rows[-1]["model_state_bytes"], rows[-1]["planned_peak_bytes"],
      rows[0]["loss"], rows[-1]["loss"])
PY
}

declare -A tok comm state plan
for name in one dp2 tp2; do
  run "$name" 4 "$steps"
  read -r tok[$name] comm[$name] state[$name] plan[$name] first last \
    < <(summary "$tmp/$name-4.jsonl")
  echo "train_tp: $name: ${tok[$name]} tokens/s, comm ${comm[$name]} of the step," \
    "model state ${state[$name]} B/rank, planned peak ${plan[$name]} B/rank," \
    "loss $first -> $last (load $(cut -d' ' -f1 /proc/loadavg))" >&2
done

bench_json train_tp "tokens_per_s@tp2_vs_dp2" "${tok[tp2]}" "${tok[dp2]}" \
  "ds DP=2 (ZeRO-0, 2x$BENCH_THREADS thread)" 1
bench_json train_tp "tokens_per_s@tp2_vs_one_rank" "${tok[tp2]}" "${tok[one]}" \
  "ds one rank ($BENCH_THREADS thread)" 1
bench_json train_tp "model_state_bytes_per_rank@tp2_vs_dp2" "${state[tp2]}" \
  "${state[dp2]}" "ds DP=2 (ZeRO-0)" 0
bench_json train_tp "comm_share@tp2_vs_dp2" "${comm[tp2]}" "${comm[dp2]}" \
  "ds DP=2 (ZeRO-0)" 0

# The fit: plans at depths 2 and 4 (one step each at depth 2), extrapolated.
declare -A fit
for name in dp2 tp2; do
  run "$name" 2 1
  read -r _ _ _ p2 _ _ < <(summary "$tmp/$name-2.jsonl")
  read -r depth params < <("$PYTHON" - "$p2" "${plan[$name]}" "$budget" "$spec" <<'PY'
import json, sys
p2, p4, budget = (float(x) for x in sys.argv[1:4])
s = json.load(open(sys.argv[4]))
per_layer = (p4 - p2) / 2
depth = int((budget / 2 - (p2 - 2 * per_layer)) // per_layer)
c, v, t = s["n_embd"], s["vocab_size"], s["n_positions"]
params = depth * (12 * c * c + 13 * c) + v * c + t * c + 2 * c
print(depth, params)
PY
)
  fit[$name]=$params
  echo "train_tp: $name: planned $p2 B/rank at 2 layers, ${plan[$name]} at 4;" \
    "deepest within $((budget / 2**20)) MiB over both ranks: $depth layers," \
    "$params parameters" >&2
  if [ "$name" = tp2 ] && [ "${TRAIN_TP_VERIFY:-0}" = 1 ]; then
    run tp2 "$depth" 2
    "$PYTHON" - "$tmp/tp2-$depth.jsonl" <<'PY' >&2
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
print(f"train_tp: tp2 trained it: peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB/rank,"
      f" planned {r['planned_peak_bytes'] / 2**30:.2f}, loss {r['loss']:.4f}")
PY
  fi
done
bench_json train_tp "params_that_fit@tp2_vs_dp2" "${fit[tp2]}" "${fit[dp2]}" \
  "ds DP=2 (ZeRO-0), planned" 1
