// RUN: ds-opt %s --ds-lower-nn-to-linalg %lower-to-llvm | %mlir-runner | %allclose %s
// Expected values: the routing by hand (docs/models.md), the weights and
// their gradient from PyTorch 1.13 autograd of DeepSpeed's top2gating
// formulas (masks, clamp(min=eps) normalization) on the same routing.

// Six tokens, three experts, k = 2, capacity 3. Ties (tokens 2 and 4) go to
// the lower expert index. First choices take slots in token order: expert 0
// gets tokens 0, 1, 3 and drops token 5; then second choices, token by
// token, continue each expert's count (token 2's and token 4's second choice
// find expert 0 full, token 5's finds expert 1 full). A token whose choices
// are all dropped (5) gets zero weights; one with a single kept choice gets
// weight 1 on it.
func.func @f(%probs: tensor<6x3xf32>, %x: tensor<6x2xf32>, %dw: tensor<6x2xf32>)
    -> (tensor<6x2xi64>, tensor<6x2xi64>, tensor<3xf32>, tensor<6x2xf32>,
        tensor<6x3xf32>, tensor<3x3x2xf32>, tensor<6x2x2xf32>) {
  %e, %s, %load = dsnn.moe_route %probs {k = 2 : i64, capacity = 3 : i64}
      : tensor<6x3xf32> -> tensor<6x2xi64>, tensor<6x2xi64>, tensor<3xf32>
  %w = dsnn.moe_gate %probs, %e, %s {normalize} : tensor<6x3xf32>, tensor<6x2xi64> -> tensor<6x2xf32>
  %dp = dsnn.moe_gate_grad %probs, %e, %s, %dw {normalize} : tensor<6x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>
  %d = dsnn.moe_dispatch %x, %e, %s : tensor<6x2xf32>, tensor<6x2xi64> -> tensor<3x3x2xf32>
  %ten = arith.constant dense<10.0> : tensor<f32>
  %y = dsnn.mul %d, %ten : tensor<3x3x2xf32>, tensor<f32> -> tensor<3x3x2xf32>
  %g = dsnn.moe_gather %y, %e, %s : tensor<3x3x2xf32>, tensor<6x2xi64> -> tensor<6x2x2xf32>
  return %e, %s, %load, %w, %dp, %d, %g : tensor<6x2xi64>, tensor<6x2xi64>, tensor<3xf32>, tensor<6x2xf32>, tensor<6x3xf32>, tensor<3x3x2xf32>, tensor<6x2x2xf32>
}

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefI64(tensor<*xi64>)
func.func @main() {
  %probs = arith.constant dense<[[0.5, 0.3, 0.2], [0.6, 0.1, 0.3], [0.2, 0.2, 0.6], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.4, 0.35, 0.25]]> : tensor<6x3xf32>
  %x = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]> : tensor<6x2xf32>
  %dw = arith.constant dense<[[0.3, -0.2], [0.5, 0.7], [-0.4, 0.9], [0.1, 0.2], [-0.6, 0.3], [0.8, -0.5]]> : tensor<6x2xf32>
  %e, %s, %load, %w, %dp, %d, %g = func.call @f(%probs, %x, %dw) : (tensor<6x3xf32>, tensor<6x2xf32>, tensor<6x2xf32>) -> (tensor<6x2xi64>, tensor<6x2xi64>, tensor<3xf32>, tensor<6x2xf32>, tensor<6x3xf32>, tensor<3x3x2xf32>, tensor<6x2x2xf32>)
  %ue = tensor.cast %e : tensor<6x2xi64> to tensor<*xi64>
  func.call @printMemrefI64(%ue) : (tensor<*xi64>) -> ()
  %us = tensor.cast %s : tensor<6x2xi64> to tensor<*xi64>
  func.call @printMemrefI64(%us) : (tensor<*xi64>) -> ()
  %ul = tensor.cast %load : tensor<3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%ul) : (tensor<*xf32>) -> ()
  %uw = tensor.cast %w : tensor<6x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%uw) : (tensor<*xf32>) -> ()
  %up = tensor.cast %dp : tensor<6x3xf32> to tensor<*xf32>
  func.call @printMemrefF32(%up) : (tensor<*xf32>) -> ()
  %ud = tensor.cast %d : tensor<3x3x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%ud) : (tensor<*xf32>) -> ()
  %ug = tensor.cast %g : tensor<6x2x2xf32> to tensor<*xf32>
  func.call @printMemrefF32(%ug) : (tensor<*xf32>) -> ()
  return
}

// EXPECT: 0 1 0 2 2 0 0 1 1 0 0 1
// EXPECT: 0 1 1 1 0 -1 2 2 0 -1 -1 -1
// EXPECT: 0.666667 0.166667 0.166667
// EXPECT: 0.625 0.375 0.666667 0.333333 1 0 0.777778 0.222222 1 0 0 0
// EXPECT: 0.234375 -0.390625 0 -0.0740741 0 0.148148 0 0 0 -0.0246914 0.0864198 0 0 0 0 0 0 0
// EXPECT: 1 2 3 4 7 8 9 10 1 2 7 8 5 6 3 4 0 0
// EXPECT: 10 20 10 20 30 40 30 40 50 60 0 0 70 80 70 80 90 100 0 0 0 0 0 0
