#!/usr/bin/env bash
# bench/gpu/run.sh - on a GPU machine, in under 5 minutes: build libdsrt and
# DSOptimTests with CUDA (only those targets), run the GPU tests (a skip is a
# failure here), then the FusedAdam bandwidth benchmark (adam_bandwidth.cu:
# effective GB/s vs the card's peak, one JSON line per case).
# Without nvcc or a usable GPU it stops with an error instead of pretending.
# Environment: DS_GPU_BUILD (default build-gpu), DS_NVCC, GPU_BENCH_PARAMS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${DS_GPU_BUILD:-$root/build-gpu}
nvcc=${DS_NVCC:-/usr/local/cuda/bin/nvcc}
fail() { echo "bench/gpu: $*" >&2; exit 1; }

[ -x "$nvcc" ] || fail "no nvcc at $nvcc (set DS_NVCC)"
# A GPU first: nothing below means anything without one.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
cat >"$probe/probe.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { std::printf("%s\n", cudaGetErrorString(e)); return 1; }
  if (n == 0) { std::printf("0 devices\n"); return 1; }
  return 0;
}
CU
"$nvcc" -o "$probe/probe" "$probe/probe.cu" >&2 || fail "nvcc cannot build a probe"
why=$("$probe/probe") || fail "no usable GPU (cudaGetDeviceCount: $why)"

if [ -x "$root/scripts/install-deps.sh" ]; then
  "$root/scripts/install-deps.sh" >&2 # installs only what is missing
fi
export CCACHE_BASEDIR=$root CCACHE_NOHASHDIR=1
cmake -G Ninja -S "$root" -B "$build" -DDS_NVCC="$nvcc" >&2
grep -q '^DS_NVCC' "$build/CMakeCache.txt" || fail "configure did not record DS_NVCC"
ninja -C "$build" dsrt DSOptimTests >&2

out="$probe/tests.txt"
"$build/bin/DSOptimTests" --gtest_filter='CudaAdam.*' | tee "$out" >&2 ||
  fail "GPU tests failed"
if grep -q '\[  SKIPPED \] CudaAdam.MatchesCpuKernelBitwise' "$out"; then
  fail "the GPU test skipped on a machine that has a GPU"
fi

"$nvcc" -O2 -arch=sm_90 -I "$root/runtime/include" "$here/adam_bandwidth.cu" \
  -L "$build/lib" -Xlinker -rpath="$build/lib" -ldsrt -o "$probe/adam_bandwidth"
"$probe/adam_bandwidth" ${GPU_BENCH_PARAMS:-}
