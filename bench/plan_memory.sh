#!/usr/bin/env bash
# plan_memory: how close ds's planned per-rank memory is to what a rank
# measurably holds, at GPT-2 medium's shape (354M parameters: 24 layers 1024
# wide, vocabulary 50257) at sequence PLAN_SEQ (128), `--synthetic`, fp32
# AdamW, micro-batch 1 per rank, 2 steps, ZeRO stages PLAN_STAGES
# ("0 1 2 3") on PLAN_RANKS (2) ranks; ZeRO-0 on PLAN_RANKS_ZERO0 (1: its
# two ranks would take about 13 GB). Per stage, for the larger rank, two
# JSON lines (ratio = planned / measured, 1 = exact):
#   "planned_vs_rss@zero<S>": ds-train's planned_rss_bytes (ds-plan-memory's
#     peak + process_bytes, the process before step 1, measured) against
#     peak_rss_bytes (getrusage);
#   "planned_vs_tracked@zero<S>": planned_peak_bytes against
#     peak_tracked_bytes (libdsrt's count of what the step holds).
# About 5 minutes and 10 GB on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
seq=${PLAN_SEQ:-128}
stages=${PLAN_STAGES:-0 1 2 3}
ranks=${PLAN_RANKS:-2}
ranks0=${PLAN_RANKS_ZERO0:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}

"$PYTHON" - "$tmp/model.json" "$seq" <<'PY'
import json, sys
json.dump({"model_type": "gpt", "n_layer": 24, "n_embd": 1024, "n_head": 16,
           "n_positions": int(sys.argv[2]), "vocab_size": 50257,
           "tie_word_embeddings": True, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu", "init_seed": 0}, open(sys.argv[1], "w"))
PY
for s in $stages; do
  n=$ranks
  [ "$s" = 0 ] && n=$ranks0
  "$PYTHON" - "$tmp/z$s.json" "$s" "$n" <<'PY'
import json, sys
out, stage, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
json.dump({"train_batch_size": n, "train_micro_batch_size_per_gpu": 1,
           "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
           "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}},
           "zero_optimization": {"stage": stage}}, open(out, "w"))
PY
  "$ds_launch" --num_procs "$n" -- "$ds_train" --model "$tmp/model.json" \
    --config "$tmp/z$s.json" --synthetic --steps 2 --quiet \
    --metrics "$tmp/z$s.jsonl" >&2
  read -r rss planned_rss tracked planned < <("$PYTHON" - "$tmp/z$s.jsonl" "$n" <<'PY'
import json, sys
path, n = sys.argv[1], int(sys.argv[2])
lines = [json.loads(open(path if r == 0 else path.replace(".jsonl", f".rank{r}.jsonl")).readlines()[-1])
         for r in range(n)]
m = max(lines, key=lambda m: m["peak_rss_bytes"])
print(m["peak_rss_bytes"], m["planned_rss_bytes"], m["peak_tracked_bytes"], m["planned_peak_bytes"])
PY
)
  echo "bench: ZeRO-$s on $n rank(s): planned RSS $planned_rss B, peak RSS $rss B;" \
    "planned $planned B, tracked $tracked B" >&2
  bench_json plan_memory "planned_vs_rss@zero$s" "$planned_rss" "$rss" "peak RSS" 1
  bench_json plan_memory "planned_vs_tracked@zero$s" "$planned" "$tracked" "libdsrt tracked peak" 1
done
