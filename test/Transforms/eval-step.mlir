// RUN: ds-opt %s --ds-eval-step --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-mixed-precision='dtype=f16 loss-scale=1' --ds-eval-step --split-input-file | FileCheck %s --check-prefix=F16
// RUN: not ds-opt %s --ds-eval-step --ds-eval-step --split-input-file 2>&1 | FileCheck %s --check-prefix=TWICE

// @eval_step is @forward with its dropout the identity (PyTorch's
// model.eval()); @forward itself is left as it was.
// CHECK-LABEL: func.func @forward(
// CHECK:         dsnn.dropout
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME:      %[[W:[^:]*]]: tensor<8x4xf32> {dsnn.param
// CHECK-SAME:      %[[X:[^:]*]]: tensor<2x4xf32>, %[[T:[^:]*]]: tensor<2xi64>) -> tensor<f32>
// CHECK-NOT:     dsnn.dropout
// CHECK:         %[[Y:.*]] = dsnn.linear %[[X]], %[[W]]
// CHECK-NEXT:    %[[G:.*]] = dsnn.gelu %[[Y]]
// CHECK-NEXT:    dsnn.cross_entropy %[[G]], %[[T]]

// fp16: the same 16-bit forward, without the loss scale (it only seeds the
// backward): no grad_scale, no loss-scale argument; the loss is f32.
// F16-LABEL: func.func @eval_step(
// F16-SAME:      %{{[^:]*}}: tensor<8x4xf32> {dsnn.param
// F16-SAME:      %{{[^:]*}}: tensor<2x4xf32>, %{{[^:]*}}: tensor<2xi64>) -> tensor<f32>
// F16-NOT:       grad_scale
// F16:           dsnn.linear {{.*}} -> tensor<2x8xf16>
// F16:           %[[L:.*]] = dsnn.cross_entropy {{.*}} -> tensor<f32>
// F16-NEXT:      return %[[L]] : tensor<f32>

// TWICE: error: ds-eval-step: @eval_step already exists; pick another name (option result=NAME) or remove it
func.func @forward(
    %w: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %x: tensor<2x4xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %y = dsnn.linear %x, %w : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
  %d = dsnn.dropout %y p 1.000000e-01 : tensor<2x8xf32>
  %g = dsnn.gelu %d : tensor<2x8xf32>
  %loss = dsnn.cross_entropy %g, %t : tensor<2x8xf32>, tensor<2xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A loss computed in 16 bits is returned as f32, the type the driver reads.
// CHECK-LABEL: func.func @eval_step(
// CHECK-SAME:      -> tensor<f32>
// CHECK:         %[[L:.*]] = dsnn.mse_loss {{.*}} -> tensor<bf16>
// CHECK-NEXT:    %[[C:.*]] = dsnn.cast %[[L]] : tensor<bf16> -> tensor<f32>
// CHECK-NEXT:    return %[[C]] : tensor<f32>
func.func @forward(
    %w: tensor<4x4xbf16> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %x: tensor<2x4xbf16>, %t: tensor<2x4xbf16>) -> tensor<bf16> {
  %y = dsnn.linear %x, %w : (tensor<2x4xbf16>, tensor<4x4xbf16>) -> tensor<2x4xbf16>
  %loss = dsnn.mse_loss %y, %t : tensor<2x4xbf16>, tensor<2x4xbf16> -> tensor<bf16>
  return %loss : tensor<bf16>
}

