#!/usr/bin/env bash
# optimizer: one AdamW step, Gparam/s, on 10M and 100M fp32 parameters, as
# one flat tensor and as 100 tensors (OPTIMIZER_CASES overrides, as
# "PARAMS:TENSORS ..."), OPTIMIZER_THREADS threads (default 2) for all sides.
#   ds:        dsrt_adam_multi (adamw_mode, fp32 grads), libdsrt from DS_BUILD
#   baselines: Debian's torch.optim.AdamW, best of foreach=True/False;
#              a memory-roofline kernel with the same traffic (reads p, g, m,
#              v; writes p, m, v; trivial arithmetic), compiled here with
#              -O3 -march=native and timed alternately with ds in one process
# Best step of OPTIMIZER_REPS (default 15 at 10M, 7 at 100M) per side; the
# medians go to stderr. Two JSON lines per case (vs torch, vs roofline), each
# with "params" and "tensors".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
lib="$DS_BUILD/lib/libdsrt.so"
if [ ! -e "$lib" ]; then
  echo "optimizer: $lib not found; build dsrt (make build, or DS_BUILD=...)" >&2
  exit 1
fi
threads=${OPTIMIZER_THREADS:-2}
export BENCH_THREADS=$threads OMP_NUM_THREADS=$threads
export OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
cases=${OPTIMIZER_CASES:-"10000000:1 10000000:100 100000000:1 100000000:100"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

${CC:-cc} -O3 -march=native -fopenmp -std=gnu11 \
  -I "$here/../runtime/include" "$here/optimizer/adamw_bench.c" \
  -L "$DS_BUILD/lib" -Wl,-rpath,"$DS_BUILD/lib" -ldsrt -o "$tmp/adamw_bench"
torch_version=$("$PYTHON" -c 'import torch; print(torch.__version__)')

emit() { # PARAMS TENSORS DS BASELINE BASELINE_NAME
  "$PYTHON" - "$@" <<'PY'
import json, sys
params, tensors, ds, base, name = sys.argv[1:6]
ds, base = float(ds), float(base)
print(json.dumps({"bench": "optimizer", "metric": "adamw_gparam_per_s",
                  "ds": round(ds, 4), "baseline": round(base, 4),
                  "baseline_name": name, "ratio": round(ds / base, 3),
                  "params": int(params), "tensors": int(tensors)}))
PY
}
gps() { "$PYTHON" -c "import sys; print(int(sys.argv[1]) / float(sys.argv[2]) / 1e9)" "$1" "$2"; }

for c in $cases; do
  params=${c%%:*}
  tensors=${c##*:}
  reps=${OPTIMIZER_REPS:-$([ "$params" -ge 50000000 ] && echo 7 || echo 15)}
  read -r ds_s roof_s ds_med roof_med < <("$tmp/adamw_bench" "$params" "$tensors" "$reps")
  read -r fe_s loop_s fe_med loop_med < <(baseline_python "$here/optimizer/torch_adamw.py" \
    "$params" "$tensors" "$reps" "$threads")
  torch_s=$("$PYTHON" -c "print(min($fe_s, $loop_s))")
  "$PYTHON" - "$params" "$tensors" "$threads" "$ds_s" "$ds_med" "$roof_s" "$roof_med" \
    "$fe_s" "$fe_med" "$loop_s" "$loop_med" <<'PY' >&2
import sys
p, t, th = sys.argv[1:4]
v = [float(x) * 1e3 for x in sys.argv[4:]]
print(f"optimizer: {p} params / {t} tensors, {th} threads; step ms, best (median): "
      f"ds {v[0]:.1f} ({v[1]:.1f}), roofline {v[2]:.1f} ({v[3]:.1f}), "
      f"torch foreach {v[4]:.1f} ({v[5]:.1f}), torch loop {v[6]:.1f} ({v[7]:.1f})")
PY
  ds=$(gps "$params" "$ds_s")
  emit "$params" "$tensors" "$ds" "$(gps "$params" "$torch_s")" \
    "torch.optim.AdamW (torch $torch_version, best of foreach=True/False)"
  emit "$params" "$tensors" "$ds" "$(gps "$params" "$roof_s")" \
    "memory roofline (same traffic: read p,g,m,v; write p,m,v)"
done
