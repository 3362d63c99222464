// RUN: ds-opt %s --ds-autodiff --split-input-file -verify-diagnostics -o /dev/null

// Each op on a parameter's gradient path that cannot be differentiated is
// one error at that op, naming it and why.

func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = zeros>}) -> tensor<f32> {
  // expected-error @+1 {{'tensor.extract_slice' op is not differentiable: it has no DifferentiableOpInterface (no VJP), yet a parameter's gradient flows through it}}
  %s = tensor.extract_slice %x[0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<1x8xf32>
  %l = dsnn.reduce_sum %s dims [0, 1] : tensor<1x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An op off the gradient path needs no VJP: the batch-only slice is fine.
func.func @forward(%w: tensor<8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                   %x: tensor<2x8xf32>) -> tensor<f32> {
  %s = tensor.extract_slice %x[0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<1x8xf32>
  %y = dsnn.mul %s, %w : tensor<1x8xf32>, tensor<8xf32> -> tensor<1x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<1x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{autodiff: no func.func @forward (the model contract; pass entry=NAME)}}
module {
  func.func @model(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}

// -----

// expected-error @+1 {{autodiff: @forward must have a body and return one scalar float loss}}
func.func @forward(%x: tensor<2xf32> {dsnn.param = #dsnn.param<name = "x", init = zeros>}) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{autodiff: @forward_backward already exists}}
func.func @forward(%x: tensor<2xf32> {dsnn.param = #dsnn.param<name = "x", init = zeros>}) -> tensor<f32> {
  %l = dsnn.reduce_sum %x dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func @forward_backward() {
  return
}

// -----

func.func @forward(%x: tensor<2xf32> {dsnn.param = #dsnn.param<name = "x", init = zeros>}) -> tensor<f32> {
  %l = dsnn.reduce_sum %x dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
// A declaration (a harness calling the gradient function) must have its type.
// expected-error @+1 {{autodiff: the declaration of @forward_backward has type '(tensor<2xf32>) -> tensor<f32>' but the gradient function is '(tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>)'}}
func.func private @forward_backward(tensor<2xf32>) -> tensor<f32>
