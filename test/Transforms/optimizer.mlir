// RUN: ds-opt %s --ds-optimizer='type=AdamW lr=3e-4 betas=0.9,0.95 eps=1e-8 weight-decay=0.1' | FileCheck %s
// RUN: ds-opt %s --ds-optimizer='type=sgd lr=0.1 momentum=0.9 nesterov=true' | FileCheck %s --check-prefix=SGD
// RUN: ds-opt %s --ds-optimizer='type=Lamb lr=1e-3 weight-decay=0.01 max-coeff=5' | FileCheck %s --check-prefix=LAMB
// RUN: ds-opt %s --ds-optimizer='type=Adam adam-w-mode=false weight-decay=0.01' | FileCheck %s --check-prefix=ADAML2

// From (loss, grads, grad_norm) to the step contract: per parameter
// exp_avg and exp_avg_sq after the parameters, then the step, then the
// batch; one fused update per parameter, weight decay on every one (the
// bias too); results (new params, new state, loss, lr, grad_norm).

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %[[W:[^:]*]]: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight"
// CHECK-SAME:      %[[B:[^:]*]]: tensor<4xf32> {dsnn.param = #dsnn.param<name = "fc.bias"
// CHECK-SAME:      %[[MW:[^:]*]]: tensor<4x8xf32> {dstrain.state = {kind = "exp_avg", param = "fc.weight"}}
// CHECK-SAME:      %[[VW:[^:]*]]: tensor<4x8xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.weight"}}
// CHECK-SAME:      %[[MB:[^:]*]]: tensor<4xf32> {dstrain.state = {kind = "exp_avg", param = "fc.bias"}}
// CHECK-SAME:      %[[VB:[^:]*]]: tensor<4xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.bias"}}
// CHECK-SAME:      %[[STEP:[^:]*]]: tensor<i64> {dstrain.step}
// CHECK-SAME:      %{{.*}}: tensor<1x2x8xf32>)
// CHECK-SAME:      -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK-SAME:      attributes {dstrain.gradient_accumulation_steps = 1 : i64}
// CHECK-NEXT:    %[[LR:.*]] = arith.constant dense<3.000000e-04> : tensor<f32>
// CHECK:         %[[NW:[^,]*]], %[[NMW:[^,]*]], %[[NVW:[^ ]*]] = dstrain.adam %[[W]], %[[GW:.*]], %[[MW]], %[[VW]] step %[[STEP]] lr %[[LR]] {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK-NEXT:    %[[NB:[^,]*]], %[[NMB:[^,]*]], %[[NVB:[^ ]*]] = dstrain.adam %[[B]], %[[GB:.*]], %[[MB]], %[[VB]] step %[[STEP]] lr %[[LR]] {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:    return %[[NW]], %[[NB]], %[[NMW]], %[[NVW]], %[[NMB]], %[[NVB]], %{{.*}}, %[[LR]], %{{.*}} :

// SGD keeps one momentum buffer per parameter.
// SGD-LABEL: func.func @train_step(
// SGD-SAME:      %{{.*}}: tensor<4x8xf32> {dstrain.state = {kind = "momentum_buffer", param = "fc.weight"}}
// SGD-SAME:      %{{.*}}: tensor<4xf32> {dstrain.state = {kind = "momentum_buffer", param = "fc.bias"}}
// SGD-SAME:      %{{.*}}: tensor<i64> {dstrain.step}
// SGD-SAME:      -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
// SGD:         dstrain.sgd %{{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<4x8xf32>, tensor<4x8xf32>
// SGD-NEXT:    dstrain.sgd %{{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<4xf32>, tensor<4xf32>

// LAMB-LABEL: func.func @train_step(
// LAMB:         dstrain.lamb %{{.*}} {max_coeff = 5.000000e+00 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4x8xf32>, tensor<4x8xf32>

// Adam with adam_w_mode false is L2 regularization.
// ADAML2-LABEL: func.func @train_step(
// ADAML2:         dstrain.adam %{{.*}} {adam_w_mode = false, weight_decay = 1.000000e-02 : f64} : tensor<4x8xf32>, tensor<4x8xf32>
func.func @train_step(
    %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
    %x: tensor<1x2x8xf32>) -> (tensor<f32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  %gw = dsnn.mul %w, %l : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %gb = dsnn.mul %b, %l : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %n = dstrain.global_norm %gw, %gb : tensor<4x8xf32>, tensor<4xf32>
  return %l, %gw, %gb, %n : tensor<f32>, tensor<4x8xf32>, tensor<4xf32>, tensor<f32>
}
