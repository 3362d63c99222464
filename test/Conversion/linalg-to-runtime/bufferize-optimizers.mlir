// RUN: ds-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --split-input-file | FileCheck %s

// The bufferization models of dstrain.adam, lamb and sgd: param and state
// are updated in place (each result is its operand's buffer), the grad is
// only read; the op becomes dstrain.apply with every hyper-parameter.
// CHECK-LABEL: func @adam_in_place
// CHECK-SAME:    (%[[P:.*]]: memref<64xf32>, %[[G:.*]]: memref<64xbf16>, %[[M:.*]]: memref<64xf32>, %[[V:.*]]: memref<64xf32>, %[[T:.*]]: memref<i64>, %[[LR:.*]]: memref<f32>)
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         dstrain.apply "adam" %[[P]], %[[G]] state(%[[M]], %[[V]]) step %[[T]] lr %[[LR]]
// CHECK-SAME:      hyper {adam_w_mode = true, beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, bias_correction = true, eps = 1.000000e-08 : f64, weight_decay = 1.000000e-02 : f64}
// CHECK-NEXT:    return %[[P]], %[[M]], %[[V]]
func.func @adam_in_place(%p: tensor<64xf32>, %g: tensor<64xbf16>, %m: tensor<64xf32>, %v: tensor<64xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr {weight_decay = 0.01 : f64} : tensor<64xf32>, tensor<64xbf16>
  return %p1, %m1, %v1 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A read-only argument (the driver's inputs) is copied once, then updated
// in place; the grad is never copied.
// CHECK-LABEL: func @read_only_param_copied
// CHECK-SAME:    (%[[P:[^:]*]]: memref<8xf32>, %[[G:[^:]*]]: memref<8xf32>, %[[B:[^:]*]]: memref<8xf32>
// CHECK:         %[[PC:.*]] = memref.alloc() {{.*}}: memref<8xf32>
// CHECK:         memref.copy %[[P]], %[[PC]]
// CHECK:         dstrain.apply "sgd" %[[PC]], %[[G]] state(%[[B]])
// CHECK-SAME:      hyper {dampening = 0.000000e+00 : f64, momentum = 9.000000e-01 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64}
// CHECK:         return %[[PC]], %[[B]]
func.func @read_only_param_copied(%p: tensor<8xf32> {bufferization.writable = false}, %g: tensor<8xf32>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %p1, %b1 = dstrain.sgd %p, %g, %b step %t lr %lr {momentum = 0.9 : f64} : tensor<8xf32>, tensor<8xf32>
  return %p1, %b1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// A value read after the update keeps its old contents: the update works on
// a copy.
// CHECK-LABEL: func @param_read_after
// CHECK:         memref.copy %{{.*}}, %[[C:.*]] :
// CHECK:         dstrain.apply "lamb" %[[C]]
func.func @param_read_after(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1, %m1, %v1 = dstrain.lamb %p, %g, %m, %v step %t lr %lr : tensor<8xf32>, tensor<8xf32>
  return %p, %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// SGD without momentum neither reads nor writes its buffer: a read-only one
// is passed through, not copied.
// CHECK-LABEL: func @sgd_no_momentum
// CHECK-SAME:    %[[B:[^:]*]]: memref<8xf32>, %{{[^:]*}}: memref<i64>
// CHECK:         dstrain.apply "sgd" %{{.*}}, %{{.*}} state(%[[B]])
// CHECK:         return %{{.*}}, %[[B]]
func.func @sgd_no_momentum(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32> {bufferization.writable = false}, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %p1, %b1 = dstrain.sgd %p, %g, %b step %t lr %lr : tensor<8xf32>, tensor<8xf32>
  return %p1, %b1 : tensor<8xf32>, tensor<8xf32>
}
