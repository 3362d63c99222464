#!/usr/bin/env bash
# make test-torch2: with torch 2.x (a virtualenv, not needed by `make test`),
# regenerates the .pt2 fixtures of test/Import/Inputs/torch2, imports and
# trains each fresh one against the losses torch just recorded, compares
# them with the committed references; then builds ds-import and ds-train
# against that torch's LibTorch (in TORCH2_BUILD, default build-torch2:
# DS_TORCH_DIR) and does the same with torch.jit.trace files of the same
# models (make_torchscript.py); and prints the measurement table of
# docs/models.md (scripts/torch2-measure.py) with Debian's LibTorch and with
# torch 2.x's.
# Usage: scripts/test-torch2.sh [BUILD [TORCH2_BUILD]]
#   (TORCH2_PYTHON: default .venv-torch2/bin/python; JOBS: ninja's -j)
set -u
build=${1:-build}
build2=${2:-build-torch2}
root=$(cd "$(dirname "$0")/.." && pwd)
py=${TORCH2_PYTHON:-$root/.venv-torch2/bin/python}
if ! "$py" -c 'import sys, torch; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then
  echo "error: $py has no torch 2.x; make one with:" >&2
  echo "  python3 -m venv .venv-torch2 && .venv-torch2/bin/pip install torch transformers" >&2
  exit 1
fi
bin=$(cd "$build/bin" && pwd)
fixtures=$root/test/Import/Inputs/torch2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
"$py" "$fixtures/make_fixtures.py" "$work" || exit 1
for model in nanogpt-sdpa nanogpt-gqa rotary-ops docs-gpt hf-gpt2 hf-llama hf-qwen3 hf-mistral; do
  if ! "$bin/ds-import" "$work/$model.pt2" -o "$work/$model.mlir"; then
    status=1
    continue
  fi
  "$bin/ds-train" --model "$work/$model.pt2" --config "$work/adamw.json" \
    --data "$work/tokens.bin" --data-order sequential --steps 10 --quiet \
    --metrics "$work/$model.jsonl" || { status=1; continue; }
  echo -n "$model (fresh export): "
  /usr/bin/python3 "$fixtures/pt2tool.py" check "$work/$model.reference.json" \
    "$work/$model.jsonl" || status=1
  echo -n "$model (committed losses vs this torch): "
  /usr/bin/python3 - "$fixtures/$model.reference.json" "$work/$model.reference.json" <<'PY' || status=1
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
worst = max(abs(x - y) / abs(y) for x, y in zip(a["losses"], b["losses"]))
ok = worst <= 1e-5
print(f"torch {a['torch_version']} vs {b['torch_version']}: max rel diff {worst:.1e} {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
done
# --init-from the Hugging Face checkpoints make_fixtures.py just saved (bf16
# Llama, 4-shard GPT-2), and the Llama directory's config.json as the spec.
for run in "hf-llama.pt2 hf-llama-ckpt/model.safetensors reference" \
           "hf-gpt2.pt2 hf-gpt2-ckpt reference" \
           "hf-llama-ckpt/config.json hf-llama-ckpt spec-reference"; do
  set -- $run
  name=${2%%/*}
  seq=; case $1 in *.json) seq="--seq-len 16" ;; esac
  echo -n "$1 --init-from $2 (fresh save_pretrained): "
  "$bin/ds-train" --model "$work/$1" $seq --init-from "$work/$2" \
    --config "$work/adamw.json" --data "$work/tokens.bin" --data-order sequential \
    --steps 10 --quiet --metrics "$work/init.jsonl" &&
    /usr/bin/python3 "$fixtures/pt2tool.py" check "$work/$name.$3.json" \
      "$work/init.jsonl" || status=1
done
for model in hf-mixtral hf-qwen3-moe; do
  echo -n "$model (fresh export): "
  "$bin/ds-import" "$work/$model.pt2" -o /dev/null 2>&1 | grep -o "routes tokens to experts by [^ ]*" || status=1
done

# TorchScript from torch 2.x: ds-import and ds-train against its LibTorch.
echo
prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
version=$("$py" -c 'import torch; print(torch.__version__)')
if ! cmake -G Ninja -S "$root" -B "$build2" -DDS_TORCH_DIR="$prefix" >"$work/cmake.log" 2>&1 ||
   ! ninja -C "$build2" ${JOBS:+-j "$JOBS"} ds-import ds-train >"$work/ninja.log" 2>&1; then
  tail -n 30 "$work/cmake.log" "$work/ninja.log" >&2
  echo "error: cannot build ds-import against LibTorch in $prefix" >&2
  exit 1
fi
bin2=$(cd "$build2/bin" && pwd)
jit=$work/torchscript
"$py" "$fixtures/make_torchscript.py" "$jit" 2>/dev/null || exit 1
for model in nanogpt-sdpa nanogpt-gqa hf-gpt2 hf-llama hf-qwen3 hf-mistral; do
  echo -n "$model (torch.jit.trace, LibTorch $version): "
  if [ -f "$jit/$model.trace-error.txt" ]; then
    # Tracing is torch's and transformers' business: recorded, not failed.
    echo "not traced: $(cat "$jit/$model.trace-error.txt")"
    continue
  fi
  "$bin2/ds-import" "$jit/$model.pt" -o "$jit/$model.mlir" &&
    "$bin2/ds-train" --model "$jit/$model.pt" --config "$jit/adamw.json" \
      --data "$jit/tokens.bin" --data-order sequential --steps 10 --quiet \
      --metrics "$jit/$model.jsonl" &&
    /usr/bin/python3 "$fixtures/pt2tool.py" check "$jit/$model.reference.json" \
      "$jit/$model.jsonl" || status=1
done
echo -n "committed torchscript/nanogpt-sdpa.pt (LibTorch 2.x): "
"$bin2/ds-train" --model "$fixtures/torchscript/nanogpt-sdpa.pt" \
  --config "$fixtures/adamw.json" --data "$fixtures/tokens.bin" \
  --data-order sequential --steps 10 --quiet --metrics "$jit/committed.jsonl" &&
  /usr/bin/python3 "$fixtures/pt2tool.py" check \
    "$fixtures/torchscript/nanogpt-sdpa.reference.json" "$jit/committed.jsonl" || status=1

echo
echo "With ds-import built against Debian's LibTorch ($build):"
"$py" "$root/scripts/torch2-measure.py" --ds-import "$bin/ds-import" --out "$work/measure" 2>/dev/null
echo
echo "With ds-import built against torch 2.x's LibTorch ($build2):"
"$py" "$root/scripts/torch2-measure.py" --ds-import "$bin2/ds-import" --out "$work/measure2" 2>/dev/null

# --- Dynamic dims (test/Import/Inputs/torch2/make_dynamic.py) -------------
# (Placed before the verdict below: after its `exit` it would not run.)
# Programs
# exported with dynamic batch and sequence dims, made fresh, train at
# another size than the export's (the config's micro-batch 2, --seq-len)
# against the losses torch just recorded at that size; torch's losses are
# compared with the committed ones. Then every .pt2 fixture's module,
# exported the same way, trains at 2 x 8 and 3 x 13 (make_dynamic.py
# --sweep).
dyn=$work/dynamic
echo
if "$py" "$fixtures/make_dynamic.py" "$dyn" >"$work/make_dynamic.log" 2>&1; then
  for run in "nanogpt-sdpa 8" "hf-llama 12"; do
    set -- $run
    echo -n "$1 (dynamic export, trained at 2 x $2): "
    "$bin/ds-train" --model "$dyn/$1.pt2" --seq-len "$2" \
      --config "$dyn/adamw.json" --data "$fixtures/tokens.bin" \
      --data-order sequential --steps 10 --quiet --metrics "$dyn/$1.jsonl" &&
      /usr/bin/python3 "$fixtures/pt2tool.py" check "$dyn/$1.reference.json" \
        "$dyn/$1.jsonl" || status=1
    echo -n "$1 (dynamic, committed losses vs this torch's, as ds's): "
    /usr/bin/python3 -c 'import json, sys
for x in json.load(open(sys.argv[1]))["losses"]: print(json.dumps({"loss": x}))' \
      "$dyn/$1.reference.json" >"$dyn/$1.fresh.jsonl" &&
      /usr/bin/python3 "$fixtures/pt2tool.py" check \
        "$fixtures/dynamic/$1.reference.json" "$dyn/$1.fresh.jsonl" || status=1
  done
  # Every .pt2 fixture's module, exported dynamic, at two other sizes.
  mkdir -p "$dyn/sweep"
  "$py" "$fixtures/make_dynamic.py" --sweep "$dyn/sweep" "$bin/ds-train" \
    2>/dev/null || status=1
else
  tail -n 20 "$work/make_dynamic.log" >&2
  echo "dynamic dims: make_dynamic.py failed" >&2
  status=1
fi
# --- end of dynamic dims ----------------------------------------------------
if [ $status -ne 0 ]; then echo "make test-torch2: FAILED"; else echo "make test-torch2: passed"; fi
exit $status
