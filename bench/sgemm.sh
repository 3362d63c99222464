#!/usr/bin/env bash
# sgemm: C = A·B in f32, square sizes (SGEMM_SIZES, default "256 512 1024").
#   ds:       linalg.matmul JIT-compiled by ds-run (ds-lower-to-llvm ->
#             dsrt_sgemm -> OpenBLAS), GFLOP/s over --repeat calls
#   baseline: torch.matmul (Debian's python3-torch), same threads, or
#             numpy.matmul if torch does not import
# and, for the smallest size, the same matmul lowered to loops (--no-blas)
# against BLAS, to show what the rewrite is worth.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
ds_run=$(ds_tool ds-run)
sizes=${SGEMM_SIZES:-"256 512 1024"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gflops() { # N MS
  "$PYTHON" -c "import sys; n=int(sys.argv[1]); print(2*n**3/(float(sys.argv[2])*1e6))" "$1" "$2"
}
ds_ms() { # FILE REPS [ds-run flags] -> "MS BLAS_CORE"
  local file=$1 reps=$2
  shift 2
  "$ds_run" "$file" --entry mm --random-inputs 0 --repeat "$reps" --time \
    --blas-threads "$BENCH_THREADS" "$@" |
    "$PYTHON" -c "import json,sys; d=json.load(sys.stdin); print(d['ms_per_call'], d['blas_core'])"
}

for n in $sizes; do
  file="$tmp/mm_$n.mlir"
  matmul_mlir "$n" >"$file"
  # About 2 GFLOP of work per side, at least 3 calls.
  reps=$("$PYTHON" -c "print(max(3, int(2e9 / (2 * $n**3))))")
  read -r ds_ms_per_call ds_core < <(ds_ms "$file" "$reps")
  ds=$(gflops "$n" "$ds_ms_per_call")
  read -r base base_core base_name < <(baseline_python - "$n" "$reps" "$BENCH_THREADS" <<'PY'
import ctypes, sys, time
n, reps, threads = (int(a) for a in sys.argv[1:4])
try:
    import torch
    torch.set_num_threads(threads)
    a, b = torch.rand(n, n) * 2 - 1, torch.rand(n, n) * 2 - 1
    mm, name = torch.matmul, "torch.matmul"
except ImportError:
    import numpy as np
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    mm, name = np.matmul, "numpy.matmul"
mm(a, b)  # warm-up, like ds-run --time
t = time.perf_counter()
for _ in range(reps):
    mm(a, b)
ms = (time.perf_counter() - t) * 1e3 / reps
# The kernels this process's OpenBLAS (loaded by torch or numpy) runs.
try:
    corename = ctypes.CDLL("libopenblas.so.0").openblas_get_corename
    corename.restype = ctypes.c_char_p
    core = corename().decode()
except (OSError, AttributeError):
    core = "not-OpenBLAS"
print(2 * n**3 / (ms * 1e6), core, name)
PY
)
  echo "sgemm: n=$n: ds $ds GFLOP/s on OpenBLAS core $ds_core, $base_name $base GFLOP/s on $base_core" >&2
  bench_json sgemm "gflops_${n}_t${BENCH_THREADS}" "$ds" "$base" "$base_name" 1
done

# What the BLAS rewrite is worth: the same function lowered to loops.
n=$(echo $sizes | awk '{print $1}')
loops=$(gflops "$n" "$(ds_ms "$tmp/mm_$n.mlir" 2 --no-blas | cut -d' ' -f1)")
blas=$(gflops "$n" "$(ds_ms "$tmp/mm_$n.mlir" 20 | cut -d' ' -f1)")
bench_json sgemm "gflops_${n}_t${BENCH_THREADS}_blas_vs_loops" "$blas" "$loops" "ds --no-blas (loops, LLVM O3)" 1
