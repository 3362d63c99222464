#!/usr/bin/env bash
# make test-torch2: with torch 2.x (a virtualenv, not needed by `make test`),
# regenerates the .pt2 fixtures of test/Import/Inputs/torch2, imports and
# trains each fresh one against the losses torch just recorded, compares
# them with the committed references, and prints the measurement table of
# docs/models.md (scripts/torch2-measure.py).
# Usage: scripts/test-torch2.sh [BUILD]   (TORCH2_PYTHON: default .venv-torch2/bin/python)
set -u
build=${1:-build}
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
echo
"$py" "$root/scripts/torch2-measure.py" --ds-import "$bin/ds-import" --out "$work/measure" 2>/dev/null
if [ $status -ne 0 ]; then echo "make test-torch2: FAILED"; else echo "make test-torch2: passed"; fi
exit $status
