// RUN: ds-opt %s --ds-optimizer --split-input-file -verify-diagnostics -o /dev/null
// RUN: not ds-opt %s --ds-optimizer=type=OneBitAdam --split-input-file 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not ds-opt %s --ds-optimizer=betas=0.9 --split-input-file 2>&1 | FileCheck %s --check-prefix=BETAS

// TYPE: error: ds-optimizer: type "OneBitAdam" is not supported; use Adam, AdamW, Lamb or SGD
// BETAS: error: ds-optimizer: betas has 1 values but needs two (beta1,beta2)

// Without ds-clip-grads' grad_norm result the form is wrong.
// expected-error @+1 {{ds-optimizer: @train_step returns 2 values but must return (loss, 1 gradients, grad_norm) and at most one step argument}}
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>})
    -> (tensor<f32>, tensor<4xf32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// Two step arguments: which one counts?
// expected-error @+1 {{ds-optimizer: @train_step returns 3 values but must return (loss, 1 gradients, grad_norm) and at most one step argument}}
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                      %s: tensor<i64> {dstrain.step}, %t: tensor<i64> {dstrain.step})
    -> (tensor<f32>, tensor<4xf32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w, %l : tensor<f32>, tensor<4xf32>, tensor<f32>
}
