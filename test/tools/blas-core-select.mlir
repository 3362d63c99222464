// When OpenBLAS's detection is a generic core, ds re-executes on the fastest
// core the CPU allows; the user's OPENBLAS_CORETYPE always wins (docs/blas.md).
// DSRT_BLAS_FAKE_DETECTED=Prescott stands for OpenBLAS 0.3.21 falling back to
// Prescott on a CPU it does not know. Needs a CPU with AVX or better.
// REQUIRES: blas-core-sandybridge
//
// A generic detection is replaced: the core in use is the best one, in
// ds-report, in ds-run's timed calls, and in what bench/ gives baselines.
// RUN: env -u OPENBLAS_CORETYPE -u DSRT_BLAS_CORE_DETECTED DSRT_BLAS_FAKE_DETECTED=Prescott ds-report 2>%t.err | FileCheck %s --check-prefix=CHOSEN
// RUN: FileCheck %s --check-prefix=QUIET --allow-empty < %t.err
// CHOSEN: BLAS core: [[CORE:[A-Za-z]+]] (chosen by ds: OpenBLAS detected the generic Prescott); this CPU allows [[CORE]] ({{.+}})
// QUIET-NOT: {{.}}
//
// RUN: env -u OPENBLAS_CORETYPE -u DSRT_BLAS_CORE_DETECTED DSRT_BLAS_FAKE_DETECTED=Prescott ds-report --blas-core > %t.core
// RUN: env -u OPENBLAS_CORETYPE -u DSRT_BLAS_CORE_DETECTED ds-report | grep -o 'allows [A-Za-z]*' | sed 's/allows //' | diff - %t.core
// RUN: env -u OPENBLAS_CORETYPE -u DSRT_BLAS_CORE_DETECTED DSRT_BLAS_FAKE_DETECTED=Prescott ds-run %s --entry mm --random-inputs 0 --time > %t.json
// RUN: python3 -c "import json, sys; core = open(sys.argv[2]).read().strip(); got = json.load(open(sys.argv[1]))['blas_core']; sys.exit(0 if got == core else f'ds-run ran {got}, ds-report chose {core}')" %t.json %t.core
//
// A detection that is not generic is kept.
// RUN: env -u OPENBLAS_CORETYPE -u DSRT_BLAS_CORE_DETECTED DSRT_BLAS_FAKE_DETECTED=Haswell ds-report | FileCheck %s --check-prefix=KEPT
// KEPT: BLAS core: {{[A-Za-z]+}} (OpenBLAS's detection)
//
// The user's generic core is kept, with one warning line naming the fix.
// RUN: env -u DSRT_BLAS_CORE_DETECTED OPENBLAS_CORETYPE=Prescott DSRT_BLAS_FAKE_DETECTED=Prescott ds-report 2>%t.err | FileCheck %s --check-prefix=USER
// RUN: FileCheck %s --check-prefix=USER-WARN < %t.err
// USER: BLAS core: Prescott (OPENBLAS_CORETYPE=Prescott); this CPU allows [[BEST:[A-Za-z]+]] (
// USER-WARN: ds-report: warning: OpenBLAS runs its generic Prescott kernels, several times slower than {{[A-Za-z]+}}, which this CPU allows; unset OPENBLAS_CORETYPE (ds then chooses) or set OPENBLAS_CORETYPE={{[A-Za-z]+}}{{$}}
//
// A name OpenBLAS 0.3.21 does not accept runs another core: said, not hidden.
// RUN: env -u DSRT_BLAS_CORE_DETECTED OPENBLAS_CORETYPE=NoSuchCore ds-report >/dev/null 2>%t.err
// RUN: FileCheck %s --check-prefix=UNKNOWN < %t.err
// UNKNOWN: ds-report: warning: OpenBLAS 0.3.21 does not accept OPENBLAS_CORETYPE=NoSuchCore and runs {{[A-Za-z]+}} instead; unset OPENBLAS_CORETYPE or set it to a name docs/blas.md lists

func.func @mm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
