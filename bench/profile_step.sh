#!/usr/bin/env bash
# profile_step: where a training step's time goes, against this machine's
# roofline. ds-train --profile runs the bench GPT of train_single
# (PROFILE_STEP_STEPS, default 6: a warm-up step and 5 profiled) and
# attributes each step's time to kernel classes (ds-profile-spans); the same
# run measures the roofline with the same threads:
#   compute: sgemm 1024 through ds-run (dsrt_sgemm -> OpenBLAS), GFLOP/s
#   memory:  STREAM's triad (profile_step/triad.c, OpenMP), GB/s
# One JSON line per class: GEMMs' GFLOP/s against the sgemm peak, the loop
# nests' and copies' GB/s against the triad ("ratio": the fraction of the
# roof reached), with the class's ms and share of the step; the table goes
# to stderr. PROFILE_STEP_JSON=FILE keeps ds-train's profile.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_train=$(ds_tool ds-train)
steps=${PROFILE_STEP_STEPS:-6}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The roofline: sgemm peak and triad bandwidth, same threads as the step.
n=1024
peak=$(sgemm_peak "$n" "$BENCH_THREADS")
cc -O3 -march=native -fopenmp "$here/profile_step/triad.c" -o "$tmp/triad"
triad=$("$tmp/triad")
echo "bench: roofline with $BENCH_THREADS thread(s): sgemm $n $peak GFLOP/s," \
  "triad $triad GB/s" >&2

profile=${PROFILE_STEP_JSON:-$tmp/profile.json}
"$ds_train" --model "$here/train_single/gpt.json" \
  --config "$here/train_single/ds_config.json" --synthetic --steps "$steps" \
  --profile "$profile" --quiet >&2

"$PYTHON" - "$profile" "$peak" "$triad" "$BENCH_THREADS" <<'PY'
import json, sys
profile, peak, triad, threads = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
p = json.load(open(profile))
for c in p["classes"]:
    if c["calls"] == 0:
        continue
    if c["class"] == "gemm":
        metric, ds, base, name = "gemm_gflop_per_s", c["gflop_per_s"], peak, "sgemm 1024 peak"
    elif c["bytes"] > 0:
        metric, ds, base, name = c["class"] + "_gb_per_s", c["gb_per_s"], triad, "stream triad"
    else:
        metric, ds, base, name = c["class"] + "_ms", c["seconds"] * 1e3, None, None
    line = {"bench": "profile_step", "metric": f"{metric}@{threads}thread(s)",
            "ds": round(ds, 4)}
    if base:
        line.update(baseline=round(base, 4), baseline_name=name,
                    ratio=round(ds / base, 3))
    line.update(ms=round(c["seconds"] * 1e3, 3), share=round(c["share"], 4))
    print(json.dumps(line))
print(json.dumps({"bench": "profile_step", "metric": "unattributed_ms",
                  "ds": round(p["unattributed_seconds"] * 1e3, 3),
                  "share": round(p["unattributed_seconds"] / p["step_seconds"], 4)}))
PY
