// RUN: ds-opt %s --ds-lower-train-to-linalg --split-input-file | FileCheck %s

// By default (optimizer-kernels) the f32 updates stay for libdsrt's kernels:
// bufferization makes them dstrain.apply, ds-lower-optimizer-to-runtime
// calls dsrt_adam_multi and friends. What else the step computes is lowered.
// CHECK-LABEL: func @updates_kept
// CHECK-NOT:     linalg.generic
// CHECK:         dstrain.adam %{{.*}} : tensor<4x8xf32>, tensor<4x8xbf16>
// CHECK:         dstrain.lamb %{{.*}} : tensor<8xf32>, tensor<8xf16>
// CHECK:         dstrain.sgd %{{.*}} : tensor<8xf32>, tensor<8xf32>
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @updates_kept(%p: tensor<4x8xf32>, %g: tensor<4x8xbf16>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>,
                        %q: tensor<8xf32>, %h: tensor<8xf16>, %r: tensor<8xf32>, %k: tensor<8xf32>,
                        %t: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr {weight_decay = 0.01 : f64} : tensor<4x8xf32>, tensor<4x8xbf16>
  %q1, %r1, %k1 = dstrain.lamb %q, %h, %r, %k step %t lr %lr : tensor<8xf32>, tensor<8xf16>
  %q2, %b2 = dstrain.sgd %q1, %q1, %r1 step %t lr %lr {momentum = 0.9 : f64} : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1, %q2, %b2, %k1, %q1, %r1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// The rest of the dstrain ops still lower to linalg.
// CHECK-LABEL: func @norm_lowered
// CHECK-NOT:     dstrain.
// CHECK:         linalg.generic
func.func @norm_lowered(%g: tensor<8xf32>) -> tensor<f32> {
  %n = dstrain.global_norm %g : tensor<8xf32>
  return %n : tensor<f32>
}

// -----

// The kept updates are pure: they sink next to each other, before the first
// use of a result, so bufferization emits them side by side and one
// dsrt_adam_multi call can serve them (ZeRO-1/2 interleave them with the
// next parameter's dsdist.shard).
// CHECK-LABEL: func @updates_clustered
// CHECK:         %[[C:.*]] = tensor.collapse_shape
// CHECK-NEXT:    %[[A:[^,]*]], %{{.*}} = dstrain.adam
// CHECK-NEXT:    = dstrain.adam %[[C]]
// CHECK-NEXT:    tensor.insert_slice %[[A]] into
func.func @updates_clustered(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>,
                             %q: tensor<2x4xf32>, %h: tensor<8xf32>, %r: tensor<8xf32>, %k: tensor<8xf32>,
                             %t: tensor<i64>, %lr: tensor<f32>, %out: tensor<16xf32>)
    -> (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr : tensor<8xf32>, tensor<8xf32>
  %qf = tensor.collapse_shape %q [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %q1:3 = dstrain.adam %qf, %h, %r, %k step %t lr %lr : tensor<8xf32>, tensor<8xf32>
  %o1 = tensor.insert_slice %p1#0 into %out[0] [8] [1] : tensor<8xf32> into tensor<16xf32>
  %o2 = tensor.insert_slice %q1#0 into %o1[8] [8] [1] : tensor<8xf32> into tensor<16xf32>
  return %o2, %p1#1, %p1#2, %q1#1, %q1#2, %q1#0 : tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
