// A micro-batch accumulation loop (odd trip count, so the result is in the
// first of the accumulator's two slots) gives bitwise the same result with
// its buffers planned as with every buffer on the heap, call after call.
// RUN: rm -rf %t && mkdir -p %t
// RUN: ds-run %s --entry accumulate --random-inputs 7 --repeat 3 --outputs %t/planned_%d.npy
// RUN: ds-run %s --entry accumulate --random-inputs 7 --no-plan-buffers --expect %t/planned_0.npy --atol 0 --rtol 0
// RUN: ds-run %s --entry accumulate --random-inputs 7 --no-reuse-buffers --expect %t/planned_0.npy --atol 0 --rtol 0
// The loop allocates nothing once planned.
// RUN: ds-opt %s --ds-lower-to-llvm -mlir-print-ir-after=ds-plan-buffers -o /dev/null 2>&1 | FileCheck %s

// CHECK-LABEL: func.func @accumulate
// CHECK:         scf.for
// CHECK-NOT:       memref.alloc
// CHECK:           arith.select
// CHECK-NOT:       memref.alloc
// CHECK:           scf.yield
// CHECK-NOT:     memref.alloc
// CHECK:         return

#id = affine_map<(i, j) -> (i, j)>

func.func @accumulate(%x: tensor<3x4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<0.0> : tensor<4x8xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %init) -> (tensor<4x8xf32>) {
    %xi = tensor.extract_slice %x[%i, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<4x8xf32>
    %e0 = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %h = linalg.matmul ins(%xi, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    %e1 = tensor.empty() : tensor<4x8xf32>
    %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %h : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e1 : tensor<4x8xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %sq = arith.mulf %b, %b : f32
      %s = arith.addf %a, %sq : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    scf.yield %new : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}
