#!/usr/bin/env bash
# startup: time from process start to the end of the first training step,
# and peak RSS through it, for the bench GPT (bench/train_single/gpt.json:
# n_embd 256, n_head 4, T 128, vocab 4096, micro-batch 4, fp32, AdamW,
# clipping) at several depths, same threads on every side.
#
# 1. Depth, one process: ds-train's first run (an empty compile cache:
#    import, the training pipeline, lowering, LLVM O3, the step written to
#    the cache and loaded, init, one step) vs PyTorch eager
#    (train_single/torch_train.py ... 1: import torch, build the model,
#    one step; torch compiles nothing). Metrics per depth:
#    "first_step_s@n_layer=N" (process start to the end of step 1) and
#    "to_first_step_s@n_layer=N" (the same less step 1's own step_ms from
#    the metrics file: what start-up costs before any training compute,
#    which is where compilation is), and "compile_cpu_s@n_layer=N": the
#    CPU seconds (user + sys) of ds-compile alone for one rank, against
#    the same at the shallowest depth: its ratio, t(shallowest) / t(N), is
#    1 when the compile does not grow with depth. Then "depth_scaling" and
#    "to_first_step_scaling" = t(deepest) / t(shallowest) per side: compile
#    once per distinct layer makes ds's close to 1. STARTUP_LAYERS (default
#    "2 8 24 96") picks the depths. The same again for the GPT the issue
#    measured (n_embd 64, context 32; metrics "...@n_embd=64,T=32,n_layer=N"),
#    whose start-up is mostly the compile: at the bench GPT's width 96 layers
#    hold 77 M parameters, whose drawing and first touch take seconds on
#    either side.
# 2. Compiled once: the same start-up from a ds-compile artifact
#    (ds-train --compiled: ds-runner, no compiler) and from a warm compile
#    cache, each against the JIT, on 1 and 2 ranks (ds-launch; the same
#    global batch per rank). Metrics "artifact_first_step_s@..." and
#    "cache_first_step_s@..." (baseline: ds JIT), "artifact_to_first_step_s@..."
#    (the artifact's and the JIT's less rank 0's step 1), "artifact_peak_rss_mb@..."
#    (the largest process). STARTUP_ARTIFACT_LAYERS (default "4 24": the
#    bench GPT and a 24-layer variant) and STARTUP_RANKS (default "1 2").
# Each run's seconds and peak RSS also go to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
ds_compile=$(ds_tool ds-compile)
ds_launch=$(ds_tool ds-launch)
layers=${STARTUP_LAYERS:-2 8 24 96}
artifact_layers=${STARTUP_ARTIFACT_LAYERS:-4 24}
ranks_list=${STARTUP_RANKS:-1 2}
config=$here/train_single/ds_config.json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=${OMPI_ALLOW_RUN_AS_ROOT:-1}
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}
echo "bench: startup, $BENCH_THREADS thread(s) per process for ds and torch" \
  "alike; ds draws its initial parameters on a thread of their own while" \
  "the step compiles, and on both once it is compiled" >&2

# timed OUT CMD...: runs CMD, writes "seconds peak_kb" to OUT (peak: the
# largest process of CMD's tree that was waited for).
timed() {
  local out=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out" "$@" >"$out.log" 2>&1 ||
    { cat "$out.log" >&2; exit 1; }
}

# spec N [EMBD CONTEXT]: the bench GPT with N layers (and that width and
# context).
spec() {
  local out=$tmp/gpt$1.${2:-w}.${3:-t}.json
  [ -f "$out" ] || "$PYTHON" - "$here/train_single/gpt.json" "$out" "$@" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
spec["n_layer"] = int(sys.argv[3])
if len(sys.argv) > 4:
    spec["n_embd"], spec["n_positions"] = int(sys.argv[4]), int(sys.argv[5])
json.dump(spec, open(sys.argv[2], "w"))
PY
  echo "$out"
}

# before_step SECONDS METRICS.jsonl: SECONDS less the first step's step_ms.
before_step() {
  "$PYTHON" - "$1" "$2" <<'PY'
import json, sys
first = json.loads(open(sys.argv[2]).readline())
print(round(float(sys.argv[1]) - first["step_ms"] / 1e3, 3))
PY
}

# depth_series TAG [EMBD CONTEXT]: part 1 for one width; TAG prefixes the
# metrics' parameters ("" for the bench GPT).
depth_series() {
  local tag=$1
  shift
  local first="" last="" n model
  for n in $layers; do
    model=$(spec "$n" "$@")
    /usr/bin/time -f "%U %S" -o "$tmp/cc${tag}$n" "$ds_compile" --model "$model" \
      --config "$config" --world-size 1 -o "$tmp/cc${tag}$n.art" --quiet
    cc_s=$("$PYTHON" -c "u, s = open('$tmp/cc${tag}$n').read().split(); print(float(u) + float(s))")
    [ -n "$first" ] || cc_first=$cc_s
    echo "bench: ${tag}n_layer $n: ds-compile ${cc_s} CPU s" >&2
    bench_json startup "compile_cpu_s@${tag}n_layer=$n" "$cc_s" "$cc_first" \
      "ds-compile at the shallowest depth" 0
    timed "$tmp/ds${tag}$n" env DS_COMPILE_CACHE="$tmp/cold${tag}$n" "$ds_train" \
      --model "$model" --config "$config" --synthetic --steps 1 --quiet \
      --metrics "$tmp/ds${tag}$n.jsonl"
    OPENBLAS_CORETYPE=$bench_blas_core timed "$tmp/torch${tag}$n" "$PYTHON" \
      "$here/train_single/torch_train.py" "$model" "$config" \
      "$BENCH_THREADS" 1 "$tmp/torch${tag}$n.jsonl"
    read -r ds_s ds_kb <"$tmp/ds${tag}$n"
    read -r torch_s torch_kb <"$tmp/torch${tag}$n"
    echo "bench: ${tag}n_layer $n: ds (cold cache) ${ds_s} s, peak RSS $((ds_kb / 1024)) MB;" \
      "torch ${torch_s} s, peak RSS $((torch_kb / 1024)) MB" >&2
    bench_json startup "first_step_s@${tag}n_layer=$n" "$ds_s" "$torch_s" \
      "torch eager" 0
    before_step "$ds_s" "$tmp/ds${tag}$n.jsonl" >"$tmp/ds${tag}$n.pre"
    before_step "$torch_s" "$tmp/torch${tag}$n.jsonl" >"$tmp/torch${tag}$n.pre"
    echo "bench: ${tag}n_layer $n, before step 1: ds $(cat "$tmp/ds${tag}$n.pre") s," \
      "torch $(cat "$tmp/torch${tag}$n.pre") s" >&2
    bench_json startup "to_first_step_s@${tag}n_layer=$n" "$(cat "$tmp/ds${tag}$n.pre")" \
      "$(cat "$tmp/torch${tag}$n.pre")" "torch eager" 0
    [ -n "$first" ] || first=$n
    last=$n
  done
  if [ "$first" != "$last" ]; then
    read -r ds_a _ <"$tmp/ds${tag}$first"
    read -r ds_b _ <"$tmp/ds${tag}$last"
    read -r torch_a _ <"$tmp/torch${tag}$first"
    read -r torch_b _ <"$tmp/torch${tag}$last"
    scaling() { "$PYTHON" -c "print($2 / $1)"; }
    bench_json startup "depth_scaling@${tag}n_layer=$first..$last" \
      "$(scaling "$ds_a" "$ds_b")" "$(scaling "$torch_a" "$torch_b")" \
      "torch eager" 0
    bench_json startup "to_first_step_scaling@${tag}n_layer=$first..$last" \
      "$(scaling "$(cat "$tmp/ds${tag}$first.pre")" "$(cat "$tmp/ds${tag}$last.pre")")" \
      "$(scaling "$(cat "$tmp/torch${tag}$first.pre")" "$(cat "$tmp/torch${tag}$last.pre")")" \
      "torch eager" 0
  fi
}
# The bench GPT, then the model of the issue that asked for compile time
# independent of depth (n_embd 64, context 32, micro-batch 4): there the
# parameters are few, so the compile is most of the start-up.
depth_series ""
depth_series "n_embd=64,T=32," 64 32

for n in $artifact_layers; do
  for r in $ranks_list; do
    # The same micro-batch per rank: the global batch grows with the ranks.
    cfg=$tmp/ds_config.r$r.json
    "$PYTHON" - "$config" "$r" "$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["train_batch_size"] = c["train_micro_batch_size_per_gpu"] * int(sys.argv[2])
c.pop("gradient_accumulation_steps", None)
json.dump(c, open(sys.argv[3], "w"))
PY
    launch=()
    [ "$r" = 1 ] || launch=("$ds_launch" --num_procs "$r" --)
    args=(--synthetic --steps 1 --quiet)
    tag="n_layer=$n,ranks=$r"
    timed "$tmp/jit.$tag" env DS_COMPILE_CACHE=off "${launch[@]}" "$ds_train" \
      --model "$(spec "$n")" --config "$cfg" "${args[@]}" \
      --metrics "$tmp/jit.$tag.jsonl"
    timed "$tmp/compile.$tag" "$ds_compile" --model "$(spec "$n")" \
      --config "$cfg" --world-size "$r" -o "$tmp/art.$tag" --quiet
    timed "$tmp/art.$tag.t" "${launch[@]}" "$ds_train" \
      --compiled "$tmp/art.$tag" "${args[@]}" --metrics "$tmp/art.$tag.jsonl"
    # Warm: a first run fills the cache, the second is timed.
    DS_COMPILE_CACHE=$tmp/cache.$tag "${launch[@]}" "$ds_train" \
      --model "$(spec "$n")" --config "$cfg" "${args[@]}" >/dev/null 2>&1
    timed "$tmp/warm.$tag" env DS_COMPILE_CACHE="$tmp/cache.$tag" \
      "${launch[@]}" "$ds_train" --model "$(spec "$n")" --config "$cfg" \
      "${args[@]}"
    read -r jit_s jit_kb <"$tmp/jit.$tag"
    read -r compile_s _ <"$tmp/compile.$tag"
    read -r art_s art_kb <"$tmp/art.$tag.t"
    read -r warm_s warm_kb <"$tmp/warm.$tag"
    echo "bench: $tag: JIT ${jit_s} s ($((jit_kb / 1024)) MB);" \
      "ds-compile ${compile_s} s once, then the artifact ${art_s} s" \
      "($((art_kb / 1024)) MB); warm cache ${warm_s} s ($((warm_kb / 1024)) MB)" >&2
    bench_json startup "artifact_first_step_s@$tag" "$art_s" "$jit_s" \
      "ds JIT" 0
    bench_json startup "cache_first_step_s@$tag" "$warm_s" "$jit_s" \
      "ds JIT" 0
    # Less rank 0's first step: what start-up alone costs each way.
    jit_pre=$(before_step "$jit_s" "$tmp/jit.$tag.jsonl")
    art_pre=$(before_step "$art_s" "$tmp/art.$tag.jsonl")
    echo "bench: $tag, before step 1: JIT ${jit_pre} s, artifact ${art_pre} s" >&2
    bench_json startup "artifact_to_first_step_s@$tag" "$art_pre" "$jit_pre" \
      "ds JIT" 0
    bench_json startup "artifact_peak_rss_mb@$tag" "$((art_kb / 1024))" \
      "$((jit_kb / 1024))" "ds JIT" 0
  done
done
