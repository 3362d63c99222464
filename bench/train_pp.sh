#!/usr/bin/env bash
# train_pp: pipeline-parallel training of the bench GPT at 8 layers
# (train_pp/gpt.json: train_single's n_embd 256, vocab 4096, fp32, AdamW;
# 4 layers leave no balanced cut into 2 stages) as 2 stages (1F1B, one
# rank per stage, BENCH_THREADS (1) thread(s) each) against the ideal bound
# of a perfect pipeline:
#   bound(m) = one rank's tokens/s x p x m / (m + p - 1)
# (p = 2 stages, m micro-batches of 4 per step: with the bubble of a
# synchronous 1F1B schedule, the best two stages can do on the same work).
#   ds:       ds-launch --num_procs 2 -- ds-train --config with
#             pipeline.stages 2 and gradient_accumulation_steps m; rank 0's
#             tokens_per_s (global batch x seq / step time)
#   baseline: the same model, config and m on ONE rank (no pipeline), its
#             tokens_per_s times p x m / (m + p - 1)
# ratio = measured / bound (1 = the schedule's bubble is all that is lost;
# communication and the stages' imbalance lower it). Both sides run ds's
# kernels (OpenBLAS core on stderr) with the same threads per rank.
# Per m it also prints the measured bubble: the fraction of the step the
# slowest stage spends blocked in pipeline sends and receives (bubble_ms /
# step_ms of the stage that waits least), against the schedule's
# (p - 1) / (m + p - 1) (metric "bubble_fraction@m<m>", lower is better).
# The slowest stage sets the pace, so its wait is the schedule's fill and
# drain plus communication; a faster stage also waits for the slower one
# (imbalance, not bubble): each stage's fraction is on stderr.
# Then, at m = TRAIN_PP_DP_M (8), the same 2 ranks as 2 data-parallel
# replicas (DP=2, ZeRO-0, the same micro-batches per replica) against PP=2:
# metric "tokens_per_s@m<m> pp_vs_dp", ratio = PP tokens/s / DP tokens/s.
# Then, at m = TRAIN_PP_IL_M (8), Megatron's interleaved 1F1B with v = 2
# model chunks per stage against 1F1B at the same m: metric
# "tokens_per_s@m<m> interleaved_vs_1f1b", ratio = interleaved / 1F1B
# tokens/s; and its slowest stage's bubble against the schedule's
# (p - 1) / (v m) (metric "bubble_fraction@m<m> interleaved").
# Every run drops TRAIN_PP_SKIP (3) warm-up steps and takes the median of
# the next TRAIN_PP_STEPS (10).
# Environment: TRAIN_PP_M ("2 4 8 16"), TRAIN_PP_SKIP, TRAIN_PP_STEPS,
# TRAIN_PP_DP_M (8; empty skips the DP comparison), TRAIN_PP_IL_M (8;
# empty skips the interleaved comparison).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_launch=$(ds_tool ds-launch)
spec=$here/train_pp/gpt.json
base_config=$here/train_dp/ds_config.json
ms=${TRAIN_PP_M:-"2 4 8 16"}
skip=${TRAIN_PP_SKIP:-3}
window=${TRAIN_PP_STEPS:-10}
steps=$((skip + window))
stages=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# config M STAGES OUT [V]: the bench config with m micro-batches of 4;
# with V, the interleaved schedule with V chunks per stage.
config() {
  "$PYTHON" - "$base_config" "$1" "$2" "$3" "${4:-1}" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
m, stages, v = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
cfg.pop("train_batch_size", None)
cfg["train_micro_batch_size_per_gpu"] = 4
cfg["gradient_accumulation_steps"] = m
cfg["pipeline"] = {"stages": stages, "schedule": "1f1b"}
if v > 1:
    cfg["pipeline"].update(schedule="interleaved", virtual_stages=v)
json.dump(cfg, open(sys.argv[4], "w"), indent=1)
PY
}

# median FILE: the median tokens/s of the measured steps.
median() {
  "$PYTHON" - "$1" "$skip" "$window" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
skip, w = int(sys.argv[2]), int(sys.argv[3])
assert len(rows) >= skip + w, f"{sys.argv[1]}: {len(rows)} steps"
print(f"{statistics.median(r['tokens_per_s'] for r in rows[skip:skip + w]):.1f}")
PY
}

# bubble FILE...: per stage (one metrics file each), the median over the
# measured steps of bubble_ms / step_ms; prints the smallest (the slowest
# stage's), then every stage's.
bubble() {
  "$PYTHON" - "$skip" "$window" "$@" <<'PY'
import json, statistics, sys
skip, w = int(sys.argv[1]), int(sys.argv[2])
fractions = []
for path in sys.argv[3:]:
    rows = [json.loads(l) for l in open(path) if l.strip()][skip:skip + w]
    fractions.append(statistics.median(r["bubble_ms"] / r["step_ms"] for r in rows))
print(f"{min(fractions):.4f}", " ".join(f"{f:.4f}" for f in fractions))
PY
}

for m in $ms; do
  config "$m" 1 "$tmp/one$m.json"
  config "$m" "$stages" "$tmp/pp$m.json"
  "$ds_train" --model "$spec" --config "$tmp/one$m.json" --synthetic \
    --steps "$steps" --quiet --metrics "$tmp/one$m.jsonl"
  "$ds_launch" --num_procs "$stages" -- "$ds_train" --model "$spec" \
    --config "$tmp/pp$m.json" --synthetic --steps "$steps" --quiet \
    --metrics "$tmp/pp$m.jsonl"
  one=$(median "$tmp/one$m.jsonl")
  pp=$(median "$tmp/pp$m.jsonl")
  bound=$("$PYTHON" -c "print($one * $stages * $m / ($m + $stages - 1))")
  echo "m=$m: one rank $one tokens/s, 2 stages $pp tokens/s, bound $bound" >&2
  bench_json train_pp "tokens_per_s@m$m" "$pp" "$bound" \
    "ideal bound: one rank's tokens/s x p x m/(m+p-1), p=2, $BENCH_THREADS thread(s) per rank" 1
  read -r measured per_stage <<<"$(bubble "$tmp/pp$m.jsonl" "$tmp/pp$m.rank1.jsonl")"
  ideal=$("$PYTHON" -c "print(round(($stages - 1) / ($m + $stages - 1), 4))")
  echo "m=$m: bubble $measured of the slowest stage's step (schedule: $ideal;" \
    "per stage: $per_stage)" >&2
  bench_json train_pp "bubble_fraction@m$m" "$measured" "$ideal" \
    "1F1B bubble (p-1)/(m+p-1), p=2" 0
done

dp_m=${TRAIN_PP_DP_M-8}
if [ -n "$dp_m" ]; then
  config "$dp_m" 1 "$tmp/dp.json"
  config "$dp_m" "$stages" "$tmp/pp.json"
  "$ds_launch" --num_procs 2 -- "$ds_train" --model "$spec" \
    --config "$tmp/dp.json" --synthetic --steps "$steps" --quiet \
    --metrics "$tmp/dp.jsonl"
  "$ds_launch" --num_procs "$stages" -- "$ds_train" --model "$spec" \
    --config "$tmp/pp.json" --synthetic --steps "$steps" --quiet \
    --metrics "$tmp/ppdp.jsonl"
  dp=$(median "$tmp/dp.jsonl")
  pp=$(median "$tmp/ppdp.jsonl")
  echo "m=$dp_m: DP=2 $dp tokens/s, PP=2 $pp tokens/s" >&2
  bench_json train_pp "tokens_per_s@m$dp_m pp_vs_dp" "$pp" "$dp" \
    "DP=2 (ZeRO-0, the same micro-batches per replica), $BENCH_THREADS thread(s) per rank" 1
fi

il_m=${TRAIN_PP_IL_M-8}
if [ -n "$il_m" ]; then
  config "$il_m" "$stages" "$tmp/f1b.json"
  config "$il_m" "$stages" "$tmp/il.json" 2
  for run in f1b il; do
    "$ds_launch" --num_procs "$stages" -- "$ds_train" --model "$spec" \
      --config "$tmp/$run.json" --synthetic --steps "$steps" --quiet \
      --metrics "$tmp/$run.jsonl"
  done
  f1b=$(median "$tmp/f1b.jsonl")
  il=$(median "$tmp/il.jsonl")
  echo "m=$il_m: interleaved (v=2) $il tokens/s, 1F1B $f1b tokens/s" >&2
  bench_json train_pp "tokens_per_s@m$il_m interleaved_vs_1f1b" "$il" "$f1b" \
    "1F1B at the same m, p=2, $BENCH_THREADS thread(s) per rank" 1
  read -r measured per_stage <<<"$(bubble "$tmp/il.jsonl" "$tmp/il.rank1.jsonl")"
  ideal=$("$PYTHON" -c "print(round(($stages - 1) / (2 * $il_m), 4))")
  echo "m=$il_m: interleaved bubble $measured of the slowest stage's step" \
    "(schedule: $ideal; per stage: $per_stage)" >&2
  bench_json train_pp "bubble_fraction@m$il_m interleaved" "$measured" "$ideal" \
    "interleaved bubble (p-1)/(v m), p=2, v=2" 0
fi
