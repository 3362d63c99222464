// RUN: ds-opt %s --ds-optimizer='type=SGD lr=0.1' | FileCheck %s

// ds-accumulate-grads already gave @train_step a step argument (dropout's
// masks are keyed by it): ds-optimizer moves it to its place after the
// state, keeping its uses, instead of adding a second one.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32> {dsnn.param
// CHECK-SAME:      %[[M:.*]]: tensor<4xf32> {dstrain.state = {kind = "momentum_buffer", param = "w"}}
// CHECK-SAME:      %[[STEP:.*]]: tensor<i64> {dstrain.step}
// CHECK-SAME:      %[[X:.*]]: tensor<1x4xf32>)
// CHECK:         tensor.extract %[[STEP]][]
// CHECK:         dstrain.sgd %[[W]], %{{.*}}, %[[M]] step %[[STEP]]
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                      %s: tensor<i64> {dstrain.step}, %x: tensor<1x4xf32>)
    -> (tensor<f32>, tensor<4xf32>, tensor<f32>) attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %k = tensor.extract %s[] : tensor<i64>
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w, %l : tensor<f32>, tensor<4xf32>, tensor<f32>
}
