// RUN: ds-opt %s --ds-clip-grads=max-norm=1.0 | FileCheck %s
// RUN: ds-opt %s --ds-clip-grads=max-norm=0 | FileCheck %s --check-prefix=NOCLIP

// gradient_clipping > 0: all gradients go through one clip_grad_norm, the
// clipped ones are returned and the norm (before clipping) is appended.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      -> (tensor<f32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>)
// CHECK:         %[[C:.*]]:2, %[[N:.*]] = dstrain.clip_grad_norm %[[GW:.*]], %[[GB:.*]] max_norm 1.000000e+00 : tensor<4x8xf32>, tensor<4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[C]]#0, %[[C]]#1, %[[N]]

// gradient_clipping = 0: the norm is still measured and returned.
// NOCLIP-LABEL: func.func @train_step(
// NOCLIP-SAME:      -> (tensor<f32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>)
// NOCLIP-NOT:     dstrain.clip_grad_norm
// NOCLIP:         %[[N:.*]] = dstrain.global_norm %[[GW:.*]], %[[GB:.*]] : tensor<4x8xf32>, tensor<4xf32>
// NOCLIP-NEXT:    return %{{.*}}, %[[GW]], %[[GB]], %[[N]]
func.func @train_step(
    %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
    %x: tensor<1x2x8xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<4xf32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  %gw = dsnn.mul %w, %l : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %gb = dsnn.mul %b, %l : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return %l, %gw, %gb : tensor<f32>, tensor<4x8xf32>, tensor<4xf32>
}
