// RUN: ds-opt %s --ds-autodiff | FileCheck %s

// ds-autodiff spells a dsnn.moe out as its routing before differentiating:
// gate linear and softmax, moe_route (no gradient), moe_gate, moe_dispatch,
// the expert region inlined, moe_gather and the weighted sum over k, the
// aux loss from the mean probabilities and the first-choice load. The
// backward dispatches the combine's cotangent to the experts (the adjoint
// of the gather), reaches the gate through moe_gate_grad (plus the aux
// loss's mean-probability term) and softmax_grad; the routing is reused,
// never recomputed.

// CHECK-LABEL: func.func @forward_backward
// CHECK:         %[[X:.*]] = dsnn.reshape %arg2 : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK:         %[[LOGITS:.*]] = dsnn.linear %[[X]], %arg0
// CHECK:         %[[P:.*]] = dsnn.softmax %[[LOGITS]] dim 1 : tensor<6x4xf32>
// CHECK:         %[[E:.*]], %[[S:.*]], %[[LOAD:.*]] = dsnn.moe_route %[[P]] {capacity = 4 : i64, k = 2 : i64}
// CHECK:         %[[W:.*]] = dsnn.moe_gate %[[P]], %[[E]], %[[S]] {normalize}
// CHECK:         %[[D:.*]] = dsnn.moe_dispatch %[[X]], %[[E]], %[[S]] : tensor<6x8xf32>, tensor<6x2xi64> -> tensor<4x4x8xf32>
// CHECK:         %[[Y:.*]] = dsnn.batch_matmul %[[D]], %arg1 {transpose_b}
// CHECK:         %[[G:.*]] = dsnn.moe_gather %[[Y]], %[[E]], %[[S]] : tensor<4x4x8xf32>, tensor<6x2xi64> -> tensor<6x2x8xf32>
// CHECK:         dsnn.mul %[[G]]
// CHECK:         dsnn.reduce_sum %{{.*}} dims [1] : tensor<6x2x8xf32> -> tensor<6x8xf32>
// CHECK:         %[[MEAN:.*]] = dsnn.reduce_mean %[[P]] dims [0]
// CHECK:         dsnn.mul %[[MEAN]], %[[LOAD]]
// Backward:
// CHECK:         %[[DD:.*]] = dsnn.moe_dispatch %{{.*}}, %[[E]], %[[S]] : tensor<6x2x8xf32>, tensor<6x2xi64> -> tensor<4x4x8xf32>
// CHECK:         %[[DW1:.*]] = dsnn.batch_matmul %[[DD]], %[[D]] {transpose_a}
// CHECK:         %[[DP:.*]] = dsnn.moe_gate_grad %[[P]], %[[E]], %[[S]], %{{.*}} {normalize}
// CHECK:         %[[DPS:.*]] = dsnn.add %{{.*}}, %[[DP]] : tensor<6x4xf32>
// CHECK:         %[[DL:.*]] = dsnn.softmax_grad %[[P]], %[[DPS]] dim 1
// CHECK:         %[[DWG:.*]] = dsnn.matmul %[[DL]], %[[X]] {transpose_a}
// CHECK:         return %{{.*}}, %[[DWG]], %[[DW1]]
func.func @forward(%wg: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "gate", init = normal, std = 0.02>},
                   %w1: tensor<4x8x8xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 0.02, expert = 0>},
                   %x: tensor<2x3x8xf32>) -> tensor<f32> {
  %y, %aux = dsnn.moe %x, %wg experts(%w1 : tensor<4x8x8xf32>)
      {num_experts = 4 : i64, k = 2 : i64, capacity_factor = 1.0 : f64}
      : tensor<2x3x8xf32>, tensor<4x8xf32> -> tensor<2x3x8xf32>, tensor<f32> {
    ^bb0(%tok: tensor<4x4x8xf32>, %a: tensor<4x8x8xf32>):
      %h = dsnn.batch_matmul %tok, %a {transpose_b} : tensor<4x4x8xf32>, tensor<4x8x8xf32> -> tensor<4x4x8xf32>
      dsnn.yield %h : tensor<4x4x8xf32>
  }
  %s = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  %l = dsnn.add %s, %aux : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}
