#!/usr/bin/env bash
# moe: expert parallelism. A MoE GPT (bench/moe/gpt-moe.json: 4 layers,
# n_embd 128, 8 experts top-2 in blocks 2 and 4, micro-batch 4 x 64 tokens)
# on 2 ranks x BENCH_THREADS (1) thread(s), fp32, AdamW, --synthetic:
#   ds:       ep_size 2 (each rank 4 experts, all-to-all around them)
#   baseline: ep_size 1 (data parallel, each rank all 8 experts)
# global tokens/s (rank 0's median over MOE_STEPS steps after MOE_SKIP) and
# per-rank model_state_bytes (ratio > 1: EP holds fewer bytes); then the
# libdsrt all-to-all vs MPI_Alltoall called directly, 1-64 MiB, 2 ranks
# (bench/collectives, bus bandwidth).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
skip=${MOE_SKIP:-3}
steps=${MOE_STEPS:-15}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for ep in 2 1; do
  sed "s/EP/$ep/" "$here/moe/ds_config.json" >"$tmp/ep$ep.json"
  "$ds_launch" --num_procs 2 -- "$ds_train" --model "$here/moe/gpt-moe.json" \
    --config "$tmp/ep$ep.json" --synthetic --steps $((skip + steps)) --quiet \
    --metrics "$tmp/ep$ep.jsonl" >&2
done
"$PYTHON" - "$tmp/ep2.jsonl" "$tmp/ep1.jsonl" "$skip" <<'PY'
import json, statistics, sys
runs = [[json.loads(l) for l in open(p)] for p in sys.argv[1:3]]
skip = int(sys.argv[3])
tps = [statistics.median(r["tokens_per_s"] for r in run[skip:]) for run in runs]
msb = [run[-1]["model_state_bytes"] for run in runs]
print(json.dumps({"bench": "moe", "metric": "global_tokens_per_s_ep2",
                  "ds": round(tps[0], 1), "baseline": round(tps[1], 1),
                  "baseline_name": "ds ep_size 1 (DP=2)",
                  "ratio": round(tps[0] / tps[1], 3)}))
print(json.dumps({"bench": "moe", "metric": "model_state_bytes_per_rank_ep2",
                  "ds": msb[0], "baseline": msb[1],
                  "baseline_name": "ds ep_size 1 (DP=2)",
                  "ratio": round(msb[1] / msb[0], 3)}))
PY
COLLECTIVES_KINDS=all_to_all "$here/collectives.sh" | sed 's/"bench": "collectives"/"bench": "moe"/'
