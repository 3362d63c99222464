// RUN: ds-opt %s --ds-fuse-linear-cross-entropy="min-logits=0 chunk=4" | FileCheck %s
// RUN: ds-opt %s --ds-fuse-linear-cross-entropy | FileCheck %s --check-prefix=SMALL
// RUN: ds-opt %s --ds-fuse-linear-cross-entropy="min-logits=0 chunk=4" --ds-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: not ds-opt %s --ds-fuse-linear-cross-entropy="chunk=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// The LM head and its loss become one op; the logits are gone. Their
// gradient is the fused op's too, reading the head's input, the weight and
// the targets only.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[H:[^:]*]]: tensor<2x3x4xf32> {dsnn.batch = "inputs"}, %[[W:[^:]*]]: tensor<10x4xf32> {dsnn.param
// CHECK-SAME:    %[[T:[^:]*]]: tensor<2x3xi64> {dsnn.batch = "targets"}
// CHECK-NEXT:    %[[L:.*]] = dsnn.linear_cross_entropy %[[H]], %[[W]], %[[T]] {chunk = 4 : i64, ignore_index = -1 : i64} : tensor<2x3x4xf32>, tensor<10x4xf32>, tensor<2x3xi64> -> tensor<f32>
// CHECK-NEXT:    return %[[L]]
// Below the default threshold (2^25 logits) nothing changes.
// SMALL-LABEL: func.func @forward(
// SMALL:         dsnn.linear
// SMALL-NEXT:    dsnn.cross_entropy
// GRAD-LABEL: func.func @forward_backward(
// GRAD-NOT:      dsnn.linear {{%}}
// GRAD-NOT:      dsnn.cross_entropy_grad
// GRAD:          dsnn.linear_cross_entropy_grad {{.*}} {chunk = 4 : i64, ignore_index = -1 : i64}
// ZERO: error: ds-fuse-linear-cross-entropy: chunk is 0; give a positive number of rows
module {
  func.func @forward(%h: tensor<2x3x4xf32> {dsnn.batch = "inputs"},
                     %w: tensor<10x4xf32> {dsnn.param = #dsnn.param<name = "head", init = normal, std = 2.0e-02>},
                     %t: tensor<2x3xi64> {dsnn.batch = "targets"}) -> tensor<f32> {
    %y = dsnn.linear %h, %w : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
    %l = dsnn.cross_entropy %y, %t {ignore_index = -1 : i64} : tensor<2x3x10xf32>, tensor<2x3xi64> -> tensor<f32>
    return %l : tensor<f32>
  }

// Left alone: a head with a bias, logits read twice, and the
// vocabulary-parallel loss. 16-bit logits widened for the loss fuse, the
// cast with them.
// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     linear_cross_entropy
// CHECK-COUNT-2: dsnn.cross_entropy %
// CHECK-NOT:     dsnn.cast
// CHECK:         dsnn.linear_cross_entropy %{{.*}} : tensor<2x4xbf16>, tensor<10x4xbf16>, tensor<2xi64> -> tensor<f32>
// CHECK-NEXT:    dsnn.linear %
// CHECK-NEXT:    dsnn.cross_entropy %{{.*}} stats
func.func @kept(%h: tensor<2x4xf32>, %w: tensor<10x4xf32>, %b: tensor<10xf32>, %t: tensor<2xi64>,
                %hb: tensor<2x4xbf16>, %wb: tensor<10x4xbf16>,
                %m: tensor<2xf32>, %s: tensor<2xf32>, %x: tensor<2xf32>, %o: tensor<1xi64>)
    -> (tensor<f32>, tensor<f32>, tensor<2x10xf32>, tensor<f32>, tensor<f32>) {
  %y0 = dsnn.linear %h, %w, %b : (tensor<2x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  %l0 = dsnn.cross_entropy %y0, %t : tensor<2x10xf32>, tensor<2xi64> -> tensor<f32>
  %y1 = dsnn.linear %h, %w : (tensor<2x4xf32>, tensor<10x4xf32>) -> tensor<2x10xf32>
  %l1 = dsnn.cross_entropy %y1, %t : tensor<2x10xf32>, tensor<2xi64> -> tensor<f32>
  %y2 = dsnn.linear %hb, %wb : (tensor<2x4xbf16>, tensor<10x4xbf16>) -> tensor<2x10xbf16>
  %c2 = dsnn.cast %y2 : tensor<2x10xbf16> -> tensor<2x10xf32>
  %l2 = dsnn.cross_entropy %c2, %t : tensor<2x10xf32>, tensor<2xi64> -> tensor<f32>
  %y3 = dsnn.linear %h, %w : (tensor<2x4xf32>, tensor<10x4xf32>) -> tensor<2x10xf32>
  %l3 = dsnn.cross_entropy %y3, %t stats %m, %s, %x offset %o : tensor<2x10xf32>, tensor<2xi64>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xi64> -> tensor<f32>
  return %l0, %l1, %y1, %l2, %l3 : tensor<f32>, tensor<f32>, tensor<2x10xf32>, tensor<f32>, tensor<f32>
}
}
