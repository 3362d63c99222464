// RUN: ds-opt %s | ds-opt | FileCheck %s
// RUN: ds-opt %s --mlir-print-op-generic | ds-opt | FileCheck %s

// Round trip of the routing ops a dsnn.moe expands into, and of a keyed
// dropout.

// CHECK-LABEL: func @routing
func.func @routing(%x: tensor<16x8xf32>, %probs: tensor<16x4xf32>, %dw: tensor<16x2xf32>) {
  // CHECK: %[[E:.*]], %[[S:.*]], %{{.*}} = dsnn.moe_route %{{.*}} {capacity = 10 : i64, k = 2 : i64} : tensor<16x4xf32> -> tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xf32>
  %e, %s, %load = dsnn.moe_route %probs {k = 2 : i64, capacity = 10 : i64}
      : tensor<16x4xf32> -> tensor<16x2xi64>, tensor<16x2xi64>, tensor<4xf32>
  // CHECK: dsnn.moe_gate %{{.*}}, %[[E]], %[[S]] {normalize} : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  %w = dsnn.moe_gate %probs, %e, %s {normalize} : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  // CHECK: dsnn.moe_dispatch %{{.*}}, %[[E]], %[[S]] : tensor<16x8xf32>, tensor<16x2xi64> -> tensor<4x10x8xf32>
  %d = dsnn.moe_dispatch %x, %e, %s : tensor<16x8xf32>, tensor<16x2xi64> -> tensor<4x10x8xf32>
  // CHECK: dsnn.moe_gather %{{.*}}, %[[E]], %[[S]] : tensor<4x10x8xf32>, tensor<16x2xi64> -> tensor<16x2x8xf32>
  %g = dsnn.moe_gather %d, %e, %s : tensor<4x10x8xf32>, tensor<16x2xi64> -> tensor<16x2x8xf32>
  // CHECK: dsnn.moe_dispatch %{{.*}}, %[[E]], %[[S]] : tensor<16x2x8xf32>, tensor<16x2xi64> -> tensor<4x10x8xf32>
  %d2 = dsnn.moe_dispatch %g, %e, %s : tensor<16x2x8xf32>, tensor<16x2xi64> -> tensor<4x10x8xf32>
  // CHECK: dsnn.moe_gate_grad %{{.*}}, %[[E]], %[[S]], %{{.*}} {normalize} : tensor<16x4xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  %dp = dsnn.moe_gate_grad %probs, %e, %s, %dw {normalize} : tensor<16x4xf32>, tensor<16x2xi64>, tensor<16x2xf32>
  // CHECK: dsnn.moe_gate %{{.*}}, %[[E]], %[[S]] : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  %w1 = dsnn.moe_gate %probs, %e, %s : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x2xf32>
  return
}

// CHECK-LABEL: func @keyed_dropout
func.func @keyed_dropout(%x: tensor<2x8xf32>, %key: tensor<i64>) -> tensor<2x8xf32> {
  // CHECK: dsnn.dropout %{{.*}} key %{{.*}} p 1.000000e-01 {seed = 7 : i64, stream = 3 : i64} : tensor<2x8xf32>
  %y = dsnn.dropout %x key %key p 0.1 {seed = 7 : i64, stream = 3 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}
