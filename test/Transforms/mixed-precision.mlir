// RUN: ds-opt %s --ds-mixed-precision=dtype=bf16 --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-mixed-precision='dtype=f16 loss-scale=1' --split-input-file | FileCheck %s --check-prefix=F16
// RUN: not ds-opt %s --ds-mixed-precision=dtype=f8 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// Parameters stay f32 arguments; each use reads a bf16 cast. Ops compute
// in bf16 (results included); the loss takes f32 logits and stays f32.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:      %[[W:[^:]*]]: tensor<8x4xf32> {dsnn.param
// CHECK-SAME:      %[[X:[^:]*]]: tensor<2x4xf32>, %[[T:[^:]*]]: tensor<2xi64>) -> tensor<f32>
// CHECK:         %[[L:.*]] = dsnn.layer "fc"("Linear") -> tensor<2x8xbf16> {
// CHECK-NEXT:      %[[X16:.*]] = dsnn.cast %[[X]] : tensor<2x4xf32> -> tensor<2x4xbf16>
// CHECK-NEXT:      %[[W16:.*]] = dsnn.cast %[[W]] : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK-NEXT:      %[[Y:.*]] = dsnn.linear %[[X16]], %[[W16]] : (tensor<2x4xbf16>, tensor<8x4xbf16>) -> tensor<2x8xbf16>
// CHECK-NEXT:      %[[G:.*]] = dsnn.gelu %[[Y]] : tensor<2x8xbf16>
// CHECK-NEXT:      dsnn.yield %[[G]] : tensor<2x8xbf16>
// CHECK:         %[[L32:.*]] = dsnn.cast %[[L]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[LOSS:.*]] = dsnn.cross_entropy %[[L32]], %[[T]] : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>
// CHECK-NEXT:    return %[[LOSS]] : tensor<f32>

// fp16 with loss scaling: the scale is read-only step state after the
// parameters, and the returned loss seeds the backward with it.
// F16-LABEL: func.func @forward(
// F16-SAME:      %{{[^:]*}}: tensor<8x4xf32> {dsnn.param
// F16-SAME:      %[[S:[^:]*]]: tensor<f32> {dstrain.state = {kind = "loss_scale"}}
// F16:           dsnn.linear {{.*}} -> tensor<2x8xf16>
// F16:           %[[LOSS:.*]] = dsnn.cross_entropy
// F16-NEXT:      %[[SCALED:.*]] = dsnn.grad_scale %[[LOSS]] by %[[S]] : tensor<f32>, tensor<f32>
// F16-NEXT:      return %[[SCALED]] : tensor<f32>

// BAD: error: ds-mixed-precision: dtype "f8" is not a 16-bit float; use bf16 or f16
func.func @forward(
    %w: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %x: tensor<2x4xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %l = dsnn.layer "fc"("Linear") -> tensor<2x8xf32> {
    %y = dsnn.linear %x, %w : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %g = dsnn.gelu %y : tensor<2x8xf32>
    dsnn.yield %g : tensor<2x8xf32>
  }
  %loss = dsnn.cross_entropy %l, %t : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A parameter used twice (tied) is cast at each use; a value produced in
// bf16 and consumed by a bf16 op needs no cast in between.
// CHECK-LABEL: func.func @forward(
// CHECK:         dsnn.cast %arg0 : tensor<16x4xf32> -> tensor<16x4xbf16>
// CHECK-NEXT:    dsnn.embedding {{.*}} -> tensor<2x3x4xbf16>
// CHECK-NEXT:    dsnn.cast %arg0 : tensor<16x4xf32> -> tensor<16x4xbf16>
// CHECK-NEXT:    dsnn.linear {{.*}} -> tensor<2x3x16xbf16>
// CHECK-NEXT:    dsnn.cast {{.*}} : tensor<2x3x16xbf16> -> tensor<2x3x16xf32>
// CHECK-NEXT:    dsnn.cross_entropy
func.func @forward(
    %wte: tensor<16x4xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02>},
    %ids: tensor<2x3xi64>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %e = dsnn.embedding %ids, %wte : tensor<2x3xi64>, tensor<16x4xf32> -> tensor<2x3x4xf32>
  %y = dsnn.linear %e, %wte : (tensor<2x3x4xf32>, tensor<16x4xf32>) -> tensor<2x3x16xf32>
  %loss = dsnn.cross_entropy %y, %t : tensor<2x3x16xf32>, tensor<2x3xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The losses combined (cross-entropy plus coef times an aux loss, as a MoE
// model's) are scalars: they stay f32, so the returned loss is f32.
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[CE:.*]] = dsnn.cross_entropy {{.*}} -> tensor<f32>
// CHECK-NEXT:    %[[COEF:.*]] = arith.constant
// CHECK-NEXT:    %[[SCALED:.*]] = dsnn.mul %arg2, %[[COEF]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    %[[SUM:.*]] = dsnn.add %[[CE]], %[[SCALED]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    return %[[SUM]] : tensor<f32>
func.func @forward(
    %w: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %x: tensor<2x4xf32>, %aux: tensor<f32>, %t: tensor<2xi64>) -> tensor<f32> {
  %y = dsnn.linear %x, %w : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  %ce = dsnn.cross_entropy %y, %t : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>
  %coef = arith.constant dense<0.01> : tensor<f32>
  %scaled = dsnn.mul %aux, %coef : tensor<f32>, tensor<f32> -> tensor<f32>
  %loss = dsnn.add %ce, %scaled : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}
