// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-elementwise-in-place))' --split-input-file | FileCheck %s
// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-elementwise-in-place),one-shot-bufferize{bufferize-function-boundaries})' --split-input-file | FileCheck %s --check-prefix=BUF

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A tied model's two vocabulary-sized gradients, each made by an op and
// read nowhere else, summed: the sum is written over the first.
// CHECK-LABEL: func @tied_sum
// CHECK:         %[[A:.*]] = linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%[[A]], %{{.*}} : tensor<64x16xf32>, tensor<64x16xf32>) outs(%[[A]] : tensor<64x16xf32>)
// Bufferized: two buffers of 64x16 (the matmul's and the transpose's), not three.
// BUF-LABEL: func @tied_sum
// BUF-COUNT-2: memref.alloc() {{.*}} : memref<64x16xf32>
// BUF-NOT:     memref.alloc() {{.*}} : memref<64x16xf32>
// BUF-NOT:     memref.copy
// BUF:         return
func.func @tied_sum(%x: tensor<64x8xf32>, %w: tensor<8x16xf32>, %e: tensor<16x64xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %i0 = tensor.empty() : tensor<64x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%i0 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %a = linalg.matmul ins(%x, %w : tensor<64x8xf32>, tensor<8x16xf32>) outs(%z : tensor<64x16xf32>) -> tensor<64x16xf32>
  %i1 = tensor.empty() : tensor<64x16xf32>
  %b = linalg.transpose ins(%e : tensor<16x64xf32>) outs(%i1 : tensor<64x16xf32>) permutation = [1, 0]
  %i2 = tensor.empty() : tensor<64x16xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<64x16xf32>, tensor<64x16xf32>) outs(%i2 : tensor<64x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<64x16xf32>
  return %s : tensor<64x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A bias (broadcast) added to a value that dies here: written over it.
// A value read again later and a function argument keep a fresh init.
// CHECK-LABEL: func @which
// CHECK:         %[[T:.*]] = linalg.transpose
// CHECK:         %[[BIASED:.*]] = linalg.generic {{.*}} ins(%[[T]], %{{.*}} : tensor<4x8xf32>, tensor<8xf32>) outs(%[[T]] : tensor<4x8xf32>)
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[BIASED]] : tensor<4x8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>) outs(%[[E2]] : tensor<4x8xf32>)
func.func @which(%x: tensor<4x8xf32>, %bias: tensor<8xf32>, %y: tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %i0 = tensor.empty() : tensor<4x8xf32>
  %t = linalg.transpose ins(%y : tensor<8x4xf32>) outs(%i0 : tensor<4x8xf32>) permutation = [1, 0]
  %i1 = tensor.empty() : tensor<4x8xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%i1 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  // %biased is returned too: read after this op.
  %i2 = tensor.empty() : tensor<4x8xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%biased : tensor<4x8xf32>) outs(%i2 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.negf %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  // %x is the caller's buffer.
  %i3 = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%i3 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %r = arith.mulf %p, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %neg, %biased, %sq : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>

// Read transposed, a dying input is not where the result is written: kept.
// CHECK-LABEL: func @transposed
// CHECK:         linalg.transpose
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         linalg.generic {{.*}} outs(%[[E]] : tensor<4x4xf32>)
func.func @transposed(%y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %i0 = tensor.empty() : tensor<4x4xf32>
  %t = linalg.transpose ins(%y : tensor<4x4xf32>) outs(%i0 : tensor<4x4xf32>) permutation = [1, 0]
  %i1 = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<4x4xf32>) outs(%i1 : tensor<4x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
