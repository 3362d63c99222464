#!/usr/bin/env bash
# scale: how large a GPT trains on this machine, and what compiling large
# models costs (issue "Real model sizes", item 8).
#
# 1. Fit, per layout: ZeRO stage 0-3 on 2 ranks (one machine, so both ranks
#    share its memory), each without and with activation checkpointing
#    (pipeline.activation_checkpoint_interval 1), fp32 AdamW, micro-batch 1
#    per rank. The model is GPT-2 large's layer (n_embd SCALE_WIDTH 1280,
#    20 heads, vocab 50257) at sequence SCALE_SEQ (128), as deep as fits:
#    both sides' peak memory is affine in depth, so each side trains the
#    model at depths 2 and 4 for SCALE_STEPS (3) steps, the same way for
#    both: the larger rank's measured peak RSS, extrapolated to the deepest
#    depth whose total over both ranks stays within SCALE_MEM_GIB (default:
#    90% of MemTotal); that model is then trained to prove it fits, with its
#    measured peak RSS and tokens/s (the last step) reported. Where that run
#    fails (an OOM kill: the extrapolation from 2 and 4 layers, where the
#    embedding dominates, can fall short), the depth steps down by 15% and
#    the run is tried again, up to 3 times.
#    Baselines on the same layout, same threads (BENCH_THREADS per rank):
#    PyTorch DistributedDataParallel over gloo (bench/train_dp/torch_dp.py
#    ddp) for ZeRO 0, and DDP + ZeroRedundancyOptimizer (zero1: optimizer
#    state sharded) for ZeRO 1-3, which is the most PyTorch shards without
#    a GPU (FSDP needs CUDA in the Debian torch); with checkpointing, each
#    block under torch.utils.checkpoint. Metrics per layout:
#    "params_that_fit@zero<S>[,ckpt]" (ds vs torch, higher is better),
#    "tokens_per_s@zero<S>[,ckpt]" at each side's own largest model, and
#    "planned_vs_rss@zero<S>[,ckpt]": ds's planned per-rank peak (what
#    ds-train checks against the machine before it compiles) against its
#    measured peak RSS at its largest model (ratio 1 = the plan is exact).
# 2. Compile: ds-compile wall seconds and planned per-rank peak for GPT-2
#    small (0.12B) to the 70B-shaped Llama on 128 ranks (the test/Scale
#    layouts), metric "compile_s@<model>": baseline is the same time at
#    GPT-2 small (ratio t(small)/t(model): 1 when compile time does not grow
#    with the parameter count); and "first_step_s@<model>" for the models
#    one process trains here at SCALE_SEQ: process start to the end of step
#    1, ds-train (cold compile cache) vs PyTorch eager
#    (bench/train_single/torch_train.py).
# SCALE_PARTS ("fit compile"), SCALE_LAYOUTS ("0 0c 1 1c 2 2c 3 3c", c: with
# checkpointing). The whole bench takes about an hour on 2 cores.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_compile=$(ds_tool ds-compile)
ds_launch=$(ds_tool ds-launch)
width=${SCALE_WIDTH:-1280}
heads=${SCALE_HEADS:-20}
seq=${SCALE_SEQ:-128}
steps=${SCALE_STEPS:-3}
parts=${SCALE_PARTS:-fit compile}
layouts=${SCALE_LAYOUTS:-0 0c 1 1c 2 2c 3 3c}
budget=$(mem_budget_bytes "${SCALE_MEM_GIB:-}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
echo "bench: scale, 2 ranks x $BENCH_THREADS thread(s) for ds and torch" \
  "alike; memory budget $((budget / 2**20)) MiB over both ranks" >&2

# spec OUT DEPTH [WIDTH HEADS SEQ]: a GPT spec.
spec() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
out, depth = sys.argv[1], int(sys.argv[2])
width, heads, seq = (int(a) for a in sys.argv[3:6])
json.dump({"model_type": "gpt", "n_layer": depth, "n_embd": width,
           "n_head": heads, "n_positions": seq, "vocab_size": 50257,
           "tie_word_embeddings": True, "layer_norm_epsilon": 1e-5,
           "activation_function": "gelu", "init_seed": 0}, open(out, "w"))
PY
}

# config OUT STAGE CKPT(0|1) RANKS: fp32 AdamW, micro-batch 1 per rank.
config() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
out, stage, ckpt, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
cfg = {"train_batch_size": ranks, "train_micro_batch_size_per_gpu": 1,
       "gradient_accumulation_steps": 1, "gradient_clipping": 1.0,
       "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}},
       "zero_optimization": {"stage": stage}}
if stage == 3:
    cfg["zero_optimization"].update(overlap_comm=True, reduce_bucket_size=5e7,
                                    stage3_max_live_parameters=1e8)
if ckpt:
    cfg["pipeline"] = {"activation_checkpoint_interval": 1}
json.dump(cfg, open(out, "w"))
PY
}

# params DEPTH: the GPT's parameter count (tied head).
params() {
  echo $(( 50257 * width + seq * width + $1 * (12 * width * width + 13 * width) + 2 * width ))
}

# deepest A2 A4: the deepest depth whose affine prediction from the values
# at depths 2 and 4 (per rank) stays within the budget over 2 ranks.
deepest() {
  "$PYTHON" -c "
import sys
a2, a4, budget = (float(x) for x in sys.argv[1:4])
slope = (a4 - a2) / 2
base = a2 - 2 * slope
print(max(1, int((budget / 2 - base) // slope)))" "$1" "$2" "$budget"
}

# torch_run MODE SPEC CONFIG OUT: 2 ranks, SCALE_STEPS steps; prints rank
# 0's peak RSS in bytes.
torch_run() {
  OPENBLAS_CORETYPE=$bench_blas_core /usr/bin/time -f "%M" -o "$4.time" \
    "$PYTHON" "$here/train_dp/torch_dp.py" "$1" "$2" "$3" "$BENCH_THREADS" \
    "$steps" "$4" >"$4.log" 2>&1 || { cat "$4.log" >&2; return 1; }
  "$PYTHON" -c "import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])['peak_rss_bytes'])" "$4"
}

# ds_run SPEC CONFIG OUT: 2 ranks, SCALE_STEPS steps; prints the larger
# rank's peak RSS in bytes.
ds_run() {
  "$ds_launch" --num_procs 2 -- "$ds_train" --model "$1" --config "$2" \
    --synthetic --steps "$steps" --quiet --metrics "$3" >"$3.log" 2>&1 ||
    { cat "$3.log" >&2; return 1; }
  "$PYTHON" -c "import json, sys; print(max(json.loads(open(f).readlines()[-1])['peak_rss_bytes'] for f in sys.argv[1:]))" \
    "$3" "${3%.jsonl}.rank1.jsonl"
}

# fit RUNNER SPEC_PREFIX DEPTH CONFIG OUT...: trains the deepest model the
# runner (ds_run, or torch_run MODE) fits at DEPTH or, after a failure,
# 15% shallower, up to 3 tries; prints "depth peak_rss_bytes".
fit() {
  local runner=$1 prefix=$2 depth=$3 cfg=$4 out=$5 try rss
  shift 5
  for try in 1 2 3; do
    spec "$prefix.json" "$depth" "$width" "$heads" "$seq"
    if rss=$("$runner" "$@" "$prefix.json" "$cfg" "$out"); then
      echo "$depth $rss"
      return 0
    fi
    echo "bench: $runner $* at $depth layers failed; trying $((depth * 85 / 100))" >&2
    depth=$((depth * 85 / 100))
  done
  return 1
}

last_field() { # last_field JSONL KEY
  "$PYTHON" -c "import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])[sys.argv[2]])" "$1" "$2"
}

if [[ " $parts " == *" fit "* ]]; then
  for layout in $layouts; do
    stage=${layout%c}
    ckpt=0; tag="zero$stage"
    [ "$layout" != "$stage" ] && { ckpt=1; tag="$tag,ckpt"; }
    cfg=$tmp/cfg.$layout.json
    config "$cfg" "$stage" "$ckpt" 2
    spec "$tmp/s2.json" 2 "$width" "$heads" "$seq"
    spec "$tmp/s4.json" 4 "$width" "$heads" "$seq"
    # ds: measure at 2 and 4 layers, train the deepest that fits.
    a2=$(ds_run "$tmp/s2.json" "$cfg" "$tmp/d2.$layout.jsonl")
    a4=$(ds_run "$tmp/s4.json" "$cfg" "$tmp/d4.$layout.jsonl")
    d=$(deepest "$a2" "$a4")
    read -r d ds_rss <<<"$(fit ds_run "$tmp/ds.$layout" "$d" "$cfg" "$tmp/ds.$layout.jsonl")"
    [ -n "$ds_rss" ] || exit 1
    ds_tps=$(last_field "$tmp/ds.$layout.jsonl" tokens_per_s)
    ds_plan=$(last_field "$tmp/ds.$layout.jsonl" planned_peak_bytes)
    # torch: measure at 2 and 4 layers, train the deepest that fits.
    mode=zero1; [ "$stage" = 0 ] && mode=ddp
    r2=$(torch_run "$mode" "$tmp/s2.json" "$cfg" "$tmp/t2.$layout.jsonl")
    r4=$(torch_run "$mode" "$tmp/s4.json" "$cfg" "$tmp/t4.$layout.jsonl")
    t=$(deepest "$r2" "$r4")
    read -r t t_rss <<<"$(fit torch_run "$tmp/t.$layout" "$t" "$cfg" "$tmp/t.$layout.jsonl" "$mode")"
    [ -n "$t_rss" ] || exit 1
    t_tps=$("$PYTHON" -c "import json, sys; print(2 * $seq / json.loads(open(sys.argv[1]).readlines()[-1])['step_ms'] * 1e3)" "$tmp/t.$layout.jsonl")
    echo "bench: $tag: ds $d layers ($(params "$d") parameters), planned" \
      "$((ds_plan / 2**20)) MiB, peak RSS $((ds_rss / 2**20)) MiB per rank," \
      "$ds_tps tokens/s; torch $mode $t layers ($(params "$t") parameters)," \
      "peak RSS $((t_rss / 2**20)) MiB per rank, $t_tps tokens/s" >&2
    bench_json scale "params_that_fit@$tag" "$(params "$d")" "$(params "$t")" "torch_$mode" 1
    bench_json scale "tokens_per_s@$tag" "$ds_tps" "$t_tps" "torch_$mode at its largest" 1
    bench_json scale "planned_vs_rss@$tag" "$ds_plan" "$ds_rss" "ds peak RSS" 1
  done
fi

if [[ " $parts " == *" compile "* ]]; then
  scale_in=$here/../test/Scale/Inputs
  models=$here/../examples/models
  config "$tmp/z0.json" 0 0 1
  spec "$tmp/gpt2-small.json" 12 768 12 1024
  spec "$tmp/gpt2-medium.json" 24 1024 16 1024
  # name spec config world-size
  ladder=(
    "gpt2-small-0.12b $tmp/gpt2-small.json $tmp/z0.json 1"
    "gpt2-medium-0.35b $tmp/gpt2-medium.json $tmp/z0.json 1"
    "gpt2-large-0.77b $models/gpt2-large.json $scale_in/zero0-mb1.json 1"
    "gpt2-xl-1.5b $models/gpt2-xl.json $scale_in/bf16-zero1-mb1.json 8"
    "gpt-1.3b-2048 $scale_in/gpt-1.3b.json $scale_in/bf16-zero1-mb1.json 8"
    "llama2-7b-zero3-8 $scale_in/llama2-7b.json $scale_in/bf16-zero3-mb1.json 8"
    "llama-70b-pp8-dp16 $scale_in/llama-70b.json $scale_in/bf16-pp8-zero1.json 128"
  )
  base_s=
  for entry in "${ladder[@]}"; do
    read -r name s c w <<<"$entry"
    /usr/bin/time -f "%e" -o "$tmp/c.time" "$ds_compile" --model "$s" \
      --config "$c" --world-size "$w" -o "$tmp/c.art" >"$tmp/c.log" 2>&1 ||
      { cat "$tmp/c.log" >&2; exit 1; }
    rm -rf "$tmp/c.art"
    secs=$(tail -1 "$tmp/c.time")
    echo "bench: $name: ds-compile ${secs} s; $(grep -o 'planned peak.*' "$tmp/c.log")" >&2
    base_s=${base_s:-$secs}
    bench_json scale "compile_s@$name" "$secs" "$base_s" "ds-compile of gpt2-small-0.12b" 0
  done
  # Start-up of one process at SCALE_SEQ, ds (cold cache) vs torch eager.
  config "$tmp/one.json" 0 0 1
  for name in gpt2-small gpt2-medium; do
    read -r depth w h <<<"$( [ $name = gpt2-small ] && echo "12 768 12" || echo "24 1024 16")"
    spec "$tmp/$name.short.json" "$depth" "$w" "$h" "$seq"
    /usr/bin/time -f "%e" -o "$tmp/f.time" env DS_COMPILE_CACHE="$tmp/cold.$name" \
      "$ds_train" --model "$tmp/$name.short.json" --config "$tmp/one.json" \
      --synthetic --steps 1 --quiet >"$tmp/f.log" 2>&1 || { cat "$tmp/f.log" >&2; exit 1; }
    ds_s=$(tail -1 "$tmp/f.time")
    /usr/bin/time -f "%e" -o "$tmp/g.time" env OPENBLAS_CORETYPE=$bench_blas_core \
      "$PYTHON" "$here/train_single/torch_train.py" "$tmp/$name.short.json" \
      "$tmp/one.json" "$BENCH_THREADS" 1 "$tmp/g.jsonl" >"$tmp/g.log" 2>&1 ||
      { cat "$tmp/g.log" >&2; exit 1; }
    torch_s=$(tail -1 "$tmp/g.time")
    echo "bench: $name at T=$seq: first step ds ${ds_s} s, torch ${torch_s} s" >&2
    bench_json scale "first_step_s@$name,T=$seq" "$ds_s" "$torch_s" "torch eager" 0
  done
fi
