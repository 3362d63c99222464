// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-split-init-tensors))' --split-input-file | FileCheck %s
// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-split-init-tensors),one-shot-bufferize{bufferize-function-boundaries})' --split-input-file | FileCheck %s --check-prefix=BUF

// One zero fill (as CSE leaves it) initializes two matmuls far apart: each
// gets its own fill of its own empty, just before it.
// CHECK-LABEL: func @fill_twice
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:    %[[Z0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x4xf32>)
// CHECK-NEXT:    linalg.matmul {{.*}} outs(%[[Z0]] : tensor<4x4xf32>)
// CHECK-NEXT:    linalg.transpose
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT:    %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK-NEXT:    linalg.matmul {{.*}} outs(%[[Z1]] : tensor<4x4xf32>)
// Bufferized, the second matmul writes a buffer of its own made where it
// is, not a copy of the first one's zeros kept alive until then.
// BUF-LABEL: func @fill_twice
// BUF:         memref.alloc() {{.*}} : memref<4x4xf32>
// BUF-NEXT:    linalg.fill
// BUF-NEXT:    linalg.matmul
// BUF-NEXT:    linalg.transpose
// BUF-NEXT:    memref.alloc() {{.*}} : memref<4x4xf32>
// BUF-NEXT:    linalg.fill
// BUF-NEXT:    linalg.matmul
// BUF-NOT:     memref.copy
func.func @fill_twice(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x8xf32>, %t: tensor<8x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %x = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  %m2 = linalg.matmul ins(%c, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m1, %m2, %x : tensor<4x4xf32>, tensor<4x4xf32>, tensor<8x4xf32>
}

// -----
// One empty is the destination of ops with no call between them: they
// keep it (bufferization writes one value after the other into its
// buffer). Across a call of a defined function (a layer running; not a
// declaration such as a trace marker) a use gets its own, unless it
// reads what was written there: the accumulation into a gradient made
// before the call overwrites it in place.
// CHECK-LABEL: func @empty_across_calls
// BUF-LABEL: func @empty_across_calls
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<16xf32>
// CHECK-NEXT:    %[[X:.*]] = linalg.generic {{.*}} outs(%[[E0]] : tensor<16xf32>)
// CHECK-NOT:     tensor.empty
// CHECK:         %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]], %{{.*}} : tensor<16xf32>, tensor<16xf32>) outs(%[[E0]] : tensor<16xf32>)
// CHECK-NOT:     tensor.empty
// CHECK:         %[[L:.*]] = call @layer(%[[Y]])
// CHECK-NEXT:    %[[E1:.*]] = tensor.empty() : tensor<16xf32>
// CHECK-NEXT:    %[[Z:.*]] = linalg.generic {{.*}} ins(%[[L]] : tensor<16xf32>) outs(%[[E1]] : tensor<16xf32>)
// CHECK-NOT:     tensor.empty
// CHECK:         %[[M:.*]] = call @layer(%[[Z]])
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[Y]], %[[M]] : tensor<16xf32>, tensor<16xf32>) outs(%[[E0]] : tensor<16xf32>)
#id = affine_map<(d0) -> (d0)>
func.func private @layer(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.tanh %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}
func.func @empty_across_calls(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  %y = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %b : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.mulf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  %l = call @layer(%y) : (tensor<16xf32>) -> tensor<16xf32>
  %z = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%l : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  %m = call @layer(%z) : (tensor<16xf32>) -> tensor<16xf32>
  %acc = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%y, %m : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %0 = arith.addf %in, %in2 : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  return %acc : tensor<16xf32>
}

// -----
// A call of a declaration (libdsrt's trace markers) runs no layer: the
// uses around it keep sharing the empty.
// CHECK-LABEL: func @marker_between
// CHECK:         tensor.empty
// CHECK-NOT:     tensor.empty
// CHECK:         return
#id = affine_map<(d0) -> (d0)>
func.func private @marker()
func.func @marker_between(%a: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  call @marker() : () -> ()
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----
// A use inside a loop counts at the loop: the loop keeps the original,
// made once before it (not once per iteration); the use after the loop
// gets its own.
// CHECK-LABEL: func @in_loop
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    %[[Z0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<8xf32>)
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      linalg.add ins(%{{.*}}, %[[Z0]] : tensor<8xf32>, tensor<8xf32>)
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<8xf32>
// CHECK-NEXT:    %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<8xf32>)
// CHECK-NEXT:    return %{{.*}}, %[[Z1]]
func.func @in_loop(%x: tensor<8xf32>, %n: index) -> (tensor<8xf32>, tensor<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> tensor<8xf32> {
    %s = linalg.add ins(%acc, %z : tensor<8xf32>, tensor<8xf32>) outs(%acc : tensor<8xf32>) -> tensor<8xf32>
    scf.yield %s : tensor<8xf32>
  }
  return %r, %z : tensor<8xf32>, tensor<8xf32>
}
