# Helpers sourced by the benchmarks in bench/.

# bench_json BENCH METRIC DS BASELINE BASELINE_NAME HIGHER_IS_BETTER(1|0)
# Prints the one JSON line of the convention; ratio > 1 means ds is better.
bench_json() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
bench, metric, ds, base, base_name, higher = sys.argv[1:7]
ds, base = float(ds), float(base)
ratio = ds / base if higher == "1" else base / ds
print(json.dumps({"bench": bench, "metric": metric, "ds": round(ds, 4),
                  "baseline": round(base, 4), "baseline_name": base_name,
                  "ratio": round(ratio, 3)}))
PY
}

# ds_tool NAME: path of a ds tool in $DS_BUILD/bin, or exit with a message.
ds_tool() {
  local tool="$DS_BUILD/bin/$1"
  if [ ! -x "$tool" ]; then
    echo "bench: $tool not found; build it (make build, or DS_BUILD=...)" >&2
    exit 1
  fi
  echo "$tool"
}

# The OpenBLAS kernels ("core") ds runs on this machine, which may not be
# OpenBLAS's own pick (docs/blas.md). Baselines link the same Debian
# libopenblas; baseline_python gives them this core too, so ratios compare
# the code, not two kernel sets.
bench_blas_core=$("$(ds_tool ds-report)" --blas-core) || exit 1
echo "bench: OpenBLAS core $bench_blas_core for ds and the baseline;" \
  "$("$(ds_tool ds-report)" 2>/dev/null | grep '^BLAS core:')" >&2

# baseline_python ARGS...: $PYTHON on ds's BLAS core.
baseline_python() {
  OPENBLAS_CORETYPE=$bench_blas_core "$PYTHON" "$@"
}

# mpicc_dsrt SRC OUT: builds an MPI program against $DS_BUILD's libdsrt.
mpicc_dsrt() {
  local lib="$DS_BUILD/lib/libdsrt.so"
  if [ ! -e "$lib" ]; then
    echo "bench: $lib not found; build dsrt (ninja -C \$DS_BUILD dsrt)" >&2
    exit 1
  fi
  mpicc -O2 -std=c11 -I"$(dirname "${BASH_SOURCE[0]}")/../runtime/include" \
    "$1" -o "$2" \
    -L"$DS_BUILD/lib" -ldsrt -Wl,-rpath,"$(cd "$DS_BUILD/lib" && pwd)"
}

# mem_budget_bytes [GIB]: GIB GiB in bytes, or 90% of MemTotal without one:
# how much of this machine a "largest model that fits" search may plan for.
mem_budget_bytes() {
  local mem_kb
  mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
  "$PYTHON" -c "import sys; print(int(float(sys.argv[1]) * 2**30))" \
    "${1:-$(( mem_kb * 9 / 10 / 1048576 ))}"
}

# sgemm_peak N THREADS: GFLOP/s of an N^3 f32 matmul through ds-run
# (dsrt_sgemm -> OpenBLAS) with THREADS BLAS threads, 10 calls.
sgemm_peak() {
  local n=$1 threads=$2 dir
  dir=$(mktemp -d)
  matmul_mlir "$n" >"$dir/mm.mlir"
  "$(ds_tool ds-run)" "$dir/mm.mlir" --entry mm --random-inputs 0 --repeat 10 \
    --time --blas-threads "$threads" |
    "$PYTHON" -c "import json,sys; print(2 * $n**3 / (json.load(sys.stdin)['ms_per_call'] * 1e6))"
  rm -rf "$dir"
}

# matmul_mlir N: a square f32 C = A·B as ds-run compiles it (@mm: linalg.fill
# and linalg.matmul on tensors, lowered to dsrt_sgemm).
matmul_mlir() {
  local n=$1
  cat <<MLIR
func.func @mm(%a: tensor<${n}x${n}xf32>, %b: tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<${n}x${n}xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32>
  %c = linalg.matmul ins(%a, %b : tensor<${n}x${n}xf32>, tensor<${n}x${n}xf32>)
                     outs(%f : tensor<${n}x${n}xf32>) -> tensor<${n}x${n}xf32>
  return %c : tensor<${n}x${n}xf32>
}
MLIR
}
