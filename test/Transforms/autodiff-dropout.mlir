// RUN: ds-opt %s --ds-autodiff --split-input-file | FileCheck %s

// A dropout with p > 0 gets a random stream in the gradient function: the
// new last argument %key {dsnn.rng_key}, the module's dsnn.init_seed and its
// ordinal as stream. Its VJP is the same dropout (same key, seed, stream:
// the same mask, recomputed) of the cotangent. @forward keeps its unkeyed
// dropouts (evaluation mode).

module attributes {dsnn.init_seed = 5 : i64} {
// CHECK-LABEL: func.func @forward(
// CHECK:         dsnn.dropout %{{.*}} p 1.000000e-01 : tensor<2x8xf32>
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      %[[W:.*]]: tensor<2x8xf32> {dsnn.param
// CHECK-SAME:      %[[KEY:.*]]: tensor<i64> {dsnn.rng_key}) -> (tensor<f32>, tensor<2x8xf32>)
// CHECK:         %[[A:.*]] = dsnn.dropout %[[W]] key %[[KEY]] p 1.000000e-01 {seed = 5 : i64} : tensor<2x8xf32>
// CHECK:         %[[B:.*]] = dsnn.dropout %[[A]] key %[[KEY]] p 2.000000e-01 {seed = 5 : i64, stream = 1 : i64} : tensor<2x8xf32>
// CHECK:         %[[DB:.*]] = dsnn.dropout %{{.*}} key %[[KEY]] p 2.000000e-01 {seed = 5 : i64, stream = 1 : i64} : tensor<2x8xf32>
// CHECK:         %[[DA:.*]] = dsnn.dropout %[[DB]] key %[[KEY]] p 1.000000e-01 {seed = 5 : i64} : tensor<2x8xf32>
// CHECK:         return %{{.*}}, %[[DA]]
func.func @forward(%w: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>}) -> tensor<f32> {
  %a = dsnn.dropout %w p 0.1 : tensor<2x8xf32>
  %b = dsnn.dropout %a p 0.2 : tensor<2x8xf32>
  %l = dsnn.reduce_sum %b dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
}

// -----

// p = 0 needs no stream: no key argument, the cotangent passes through.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      tensor<2x8xf32> {dsnn.param{{.*}}}) -> (tensor<f32>, tensor<2x8xf32>)
// CHECK:         dsnn.dropout %arg0 p 0.000000e+00 : tensor<2x8xf32>
// CHECK-NOT:     dsnn.dropout
func.func @forward(%w: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>}) -> tensor<f32> {
  %a = dsnn.dropout %w p 0.0 : tensor<2x8xf32>
  %l = dsnn.reduce_sum %a dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
