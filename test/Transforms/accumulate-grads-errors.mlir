// RUN: ds-opt %s --ds-accumulate-grads=steps=4 --split-input-file -verify-diagnostics -o /dev/null

// expected-error @+1 {{ds-accumulate-grads: no func.func @forward_backward; run ds-autodiff first}}
module {
  func.func @forward() {
    return
  }
}

// -----

// expected-error @+1 {{ds-accumulate-grads: @forward_backward must return (loss, one gradient per parameter of its type)}}
func.func @forward_backward(
    %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %x: tensor<2x8xf32>) -> tensor<f32> {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{ds-accumulate-grads: batch argument #1 has type 'tensor<?x8xf32>'; micro-batching needs statically shaped tensors}}
func.func @forward_backward(
    %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %x: tensor<?x8xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4x8xf32>
}
