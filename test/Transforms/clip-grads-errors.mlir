// RUN: ds-opt %s --ds-clip-grads=max-norm=1.0 --split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{ds-clip-grads: no func.func @train_step with a body; run ds-accumulate-grads first}}
module {
}

// -----

// Already clipped (the norm is the last result): running twice is an error.
// expected-error @+1 {{ds-clip-grads: @train_step returns 3 values but must return (loss, 1 gradients of its parameters' types)}}
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>})
    -> (tensor<f32>, tensor<4xf32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w, %l : tensor<f32>, tensor<4xf32>, tensor<f32>
}
// RUN: not ds-opt %s --ds-clip-grads=max-norm=-1 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: ds-clip-grads: max-norm is -1 but gradient_clipping must be >= 0
