#!/usr/bin/env bash
# train_single: one training step (forward + backward + clipping + AdamW) of
# the issue-3 bench GPT (n_layer 4, n_embd 256, n_head 4, n_positions 128,
# vocab 4096, micro-batch 4, fp32), tokens/s, ds vs PyTorch eager, one
# process, same threads.
#   ds:       ds-train --model train_single/gpt.json
#             --config train_single/ds_config.json --synthetic (compile +
#             JIT happen before step 1 and are not timed by ds-train)
#   baseline: train_single/torch_train.py: the docs/models.md GPT in an
#             eager loop (zero_grad(set_to_none), forward, backward,
#             clip_grad_norm_, AdamW(foreach=True), same WarmupLR schedule)
# Both sides: TRAIN_SINGLE_SKIP (3) warm-up steps dropped, then the median
# step time of the next TRAIN_SINGLE_STEPS (30) steps; tokens/s = B*T/median.
#
# Thread counts: BENCH_THREADS; with the default (1) the bench also runs the
# 2-thread comparison. TRAIN_SINGLE_THREADS="1" (or "2", "1 2") overrides.
# One JSON line per thread count, metric "tokens_per_s@Nthread(s)".
# Precisions: TRAIN_SINGLE_DTYPES (default "f32 bf16"). bf16 adds
# "bf16": {"enabled": true} to the config for ds and runs torch's forward
# under CPU autocast to bfloat16 (metric "tokens_per_s_bf16@..."), and one
# more line, "bf16_speedup@...": ds bf16 tokens/s over ds f32 (the
# baseline column is ds f32).
# With torch 2.x in a virtualenv (TRAIN_SINGLE_TORCH2, default
# .venv-torch2/bin/python, made by `python3 -m venv .venv-torch2 &&
# .venv-torch2/bin/pip install torch`; "off" skips it), each row gets a
# second baseline, torch.compile (Inductor) under torch 2.x with the same
# threads: metric "..._vs_torch_compile" (its MKL/oneDNN products are not
# ds's OpenBLAS, so this is the strongest baseline, not a same-kernels one).
# And per thread count "fraction_of_peak@...": the f32 step's model FLOPs
# (the matrix products counted from the spec, forward x 3) per second over
# the sgemm peak measured in the same run with the same threads (a 1024^3
# matmul through ds-run, as profile_step measures it); the baseline column
# is the peak in GFLOP/s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
spec=$here/train_single/gpt.json
config=$here/train_single/ds_config.json
skip=${TRAIN_SINGLE_SKIP:-3}
measured=${TRAIN_SINGLE_STEPS:-30}
steps=$((skip + measured))
if [ -n "${TRAIN_SINGLE_THREADS:-}" ]; then
  thread_list=$TRAIN_SINGLE_THREADS
elif [ "$BENCH_THREADS" = 1 ]; then
  thread_list="1 2"
else
  thread_list=$BENCH_THREADS
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dtype_list=${TRAIN_SINGLE_DTYPES:-f32 bf16}
torch2=${TRAIN_SINGLE_TORCH2:-$here/../.venv-torch2/bin/python}
if [ "$torch2" != off ] && ! "$torch2" -c "import torch" 2>/dev/null; then
  echo "train_single: no torch 2.x at $torch2 (TRAIN_SINGLE_TORCH2); torch.compile rows skipped" >&2
  torch2=off
fi
"$PYTHON" - "$config" "$tmp/bf16.json" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg["bf16"] = {"enabled": True}
json.dump(cfg, open(sys.argv[2], "w"), indent=2)
PY

# summarize FILE: "tokens_per_s median_step_ms loss_first loss_last" over the
# measured steps of a per-step JSONL (B*T tokens per step).
summarize() {
  "$PYTHON" - "$1" "$skip" "$measured" "$spec" "$config" <<'PY'
import json, statistics, sys
path, skip, n, spec, cfg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:6]
rows = [json.loads(l) for l in open(path) if l.strip()]
assert len(rows) >= skip + n, f"{path}: {len(rows)} steps, want {skip + n}"
ms = statistics.median(r["step_ms"] for r in rows[skip:skip + n])
tokens = json.load(open(cfg))["train_batch_size"] * json.load(open(spec))["n_positions"]
print(tokens / (ms / 1e3), ms, rows[0]["loss"], rows[-1]["loss"])
PY
}

# Model FLOPs of one step: per token, each block's QKV, projection and MLP
# products (24 C^2), attention's two T x T products (4 T C, full matrices as
# ds computes them) and the LM head (2 C V); the backward twice the forward.
step_flops=$("$PYTHON" - "$spec" "$config" <<'PY'
import json, sys
s, c = (json.load(open(p)) for p in sys.argv[1:3])
C, L, T, V = s["n_embd"], s["n_layer"], s["n_positions"], s["vocab_size"]
inner = s.get("n_inner") or 4 * C
per_token = L * (2 * (3 * C * C + C * C + 2 * C * inner) + 4 * T * C) + 2 * C * V
print(3 * per_token * T * c["train_batch_size"])
PY
)
n=1024

cores=$(getconf _NPROCESSORS_ONLN) # not nproc: it obeys OMP_NUM_THREADS
for t in $thread_list; do
  export BENCH_THREADS=$t OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t
  for dt in $dtype_list; do
    cfg=$config
    [ "$dt" = bf16 ] && cfg=$tmp/bf16.json
    run=${dt}_$t
    "$ds_train" --model "$spec" --config "$cfg" --synthetic --steps "$steps" \
      --metrics "$tmp/ds_$run.jsonl" --quiet >&2
    baseline_python "$here/train_single/torch_train.py" "$spec" "$cfg" "$t" "$steps" \
      "$tmp/torch_$run.jsonl"
    # Same LR schedule on both sides: the per-step lr must agree.
    "$PYTHON" - "$tmp/ds_$run.jsonl" "$tmp/torch_$run.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
bad = [(x["step"], x["lr"], y["lr"]) for x, y in zip(a, b)
       if abs(x["lr"] - y["lr"]) > 1e-6 * max(1e-12, abs(y["lr"])) + 1e-12]
if bad:
    sys.exit(f"train_single: lr schedules differ (step, ds, torch): {bad[:3]}")
PY
    read -r ds ds_ms ds_l0 ds_l1 < <(summarize "$tmp/ds_$run.jsonl")
    read -r base base_ms base_l0 base_l1 < <(summarize "$tmp/torch_$run.jsonl")
    echo "train_single: ${t} thread(s), $dt: ds ${ds_ms} ms/step (loss ${ds_l0} -> ${ds_l1})," \
      "torch ${base_ms} ms/step (loss ${base_l0} -> ${base_l1}); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    # The load average counts our own threads; above the core count other
    # processes distort wall-clock step times (2-thread
    # OpenMP/OpenBLAS runs worst: spinning threads lose their time slices).
    if "$PYTHON" -c "import os, sys; sys.exit(os.getloadavg()[0] <= $cores + 0.5)"; then
      echo "train_single: warning: machine busy (load $(cut -d' ' -f1 /proc/loadavg) on $cores cores" \
        "with $t thread(s)); step times are noisy, re-run when idle" >&2
    fi
    if [ "$t" = 1 ]; then at="@1thread"; else at="@${t}threads"; fi
    metric=tokens_per_s$at
    base_name="pytorch eager (torch $("$PYTHON" -c 'import torch; print(torch.__version__)'), AdamW foreach)"
    if [ "$dt" = bf16 ]; then
      metric=tokens_per_s_bf16$at
      base_name="pytorch eager, CPU autocast bf16 (torch $("$PYTHON" -c 'import torch; print(torch.__version__)'), AdamW foreach)"
    fi
    bench_json train_single "$metric" "$ds" "$base" "$base_name" 1
    if [ "$torch2" != off ]; then
      "$torch2" "$here/train_single/torch_train.py" "$spec" "$cfg" "$t" "$steps" \
        "$tmp/compile_$run.jsonl" compile
      read -r comp comp_ms comp_l0 comp_l1 < <(summarize "$tmp/compile_$run.jsonl")
      echo "train_single: ${t} thread(s), $dt: torch.compile ${comp_ms} ms/step (loss ${comp_l0} -> ${comp_l1})" >&2
      bench_json train_single "${metric}_vs_torch_compile" "$ds" "$comp" \
        "torch.compile inductor (torch $("$torch2" -c 'import torch; print(torch.__version__)'))$([ "$dt" = bf16 ] && echo ', CPU autocast bf16')" 1
    fi
    eval "ds_tps_$dt=$ds"
  done
  if [ -n "${ds_tps_f32:-}" ] && [ -n "${ds_tps_bf16:-}" ]; then
    bench_json train_single "bf16_speedup$at" "$ds_tps_bf16" "$ds_tps_f32" "ds f32, same run" 1
  fi
  if [ -n "${ds_tps_f32:-}" ]; then
    peak=$(sgemm_peak "$n" "$t")
    "$PYTHON" - "$step_flops" "$ds_tps_f32" "$spec" "$config" "$n" "$peak" "$at" <<'PY'
import json, sys
flops, tps, spec, cfg, n, peak, at = sys.argv[1:8]
tokens = json.load(open(cfg))["train_batch_size"] * json.load(open(spec))["n_positions"]
achieved = float(flops) * float(tps) / tokens / 1e9
peak = float(peak)
print(json.dumps({"bench": "train_single", "metric": "fraction_of_peak" + at,
                  "ds": round(achieved, 2), "baseline": round(peak, 2),
                  "baseline_name": f"sgemm {n}^3 peak, same threads, GFLOP/s",
                  "ratio": round(achieved / peak, 3)}))
PY
  fi
  unset ds_tps_f32 ds_tps_bf16
done
