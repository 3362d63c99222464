// RUN: ds-opt %s --ds-fuse-elementwise --split-input-file | FileCheck %s

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// exp then a row sum: the exp is computed inside the reduction.
// CHECK-LABEL: func @exp_into_sum
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "reduction"]
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
func.func @exp_into_sum(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
           ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
           ins(%exp : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %sum : tensor<4xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// A normalization feeding a matmul stays separate: fused, it would be
// recomputed for every output column and the matmul would not reach BLAS.
// CHECK-LABEL: func @never_into_matmul
// CHECK:         linalg.generic
// CHECK:           math.tanh
// CHECK:         linalg.matmul
func.func @never_into_matmul(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %c: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
         ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %y = linalg.matmul ins(%t, %w : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>

// A producer read through a broadcast (each element used 8 times) is not
// recomputed 8 times.
// CHECK-LABEL: func @no_broadcast_recompute
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK:         linalg.generic
// CHECK:           arith.mulf
func.func @no_broadcast_recompute(%s: tensor<4xf32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e1 = tensor.empty() : tensor<4xf32>
  %exp = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
           ins(%s : tensor<4xf32>) outs(%e1 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.exp %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
         ins(%x, %exp : tensor<4x8xf32>, tensor<4xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.mulf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

#v = affine_map<(i) -> (i)>

// Gradients of three micro-batches summed as they come: the first sum is
// not fused into the second across the call that makes the third (fused,
// all three would be held until one sum at the end). With no call between,
// the chain fuses as before.
// CHECK-LABEL: func @not_across_a_layer
// CHECK:         %[[S1:.*]] = linalg.generic
// CHECK:           arith.addf
// CHECK:         %[[G3:.*]] = call @layer
// CHECK:         linalg.generic {{.*}} ins(%[[S1]], %[[G3]] :
// CHECK:           arith.addf
// CHECK-LABEL: func @fused_without_a_layer
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
func.func private @layer(%x: tensor<16xf32>) -> tensor<16xf32> {
  return %x : tensor<16xf32>
}
func.func @not_across_a_layer(%g1: tensor<16xf32>, %g2: tensor<16xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %s1 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
          ins(%g1, %g2 : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %g3 = call @layer(%x) : (tensor<16xf32>) -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16xf32>
  %s2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
          ins(%s1, %g3 : tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %s2 : tensor<16xf32>
}
func.func @fused_without_a_layer(%g1: tensor<16xf32>, %g2: tensor<16xf32>, %g3: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %s1 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
          ins(%g1, %g2 : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %e2 = tensor.empty() : tensor<16xf32>
  %s2 = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
          ins(%s1, %g3 : tensor<16xf32>, tensor<16xf32>) outs(%e2 : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %s2 : tensor<16xf32>
}
