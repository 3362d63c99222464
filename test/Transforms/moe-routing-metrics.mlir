// RUN: ds-opt %s --ds-autodiff --ds-accumulate-grads=steps=2 --ds-moe-routing-metrics | FileCheck %s

// The forward route of layer "h.0" (its experts and slots, already saved for
// the backward, and its aux loss) is counted after the layer: one loop over
// the 6 x 2 choices adds 1 to the chosen expert's count and to the dropped
// count when the slot is -1. @forward_backward returns the three after the
// gradients; @train_step sums them over its two micro-batches, halves the
// aux loss sum (the mean, as for the loss), reduces over the grid (sum,
// sum, avg) and returns them after everything else, each named.

// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME:    -> (tensor<f32>, tensor<4x8xf32>, tensor<4x8x8xf32>,
// CHECK-SAME:        tensor<4xf32> {dstrain.metric = "moe/h.0/exp_counts"},
// CHECK-SAME:        tensor<f32> {dstrain.metric = "moe/h.0/dropped"},
// CHECK-SAME:        tensor<f32> {dstrain.metric = "moe/h.0/aux_loss"})
// CHECK:         %[[L:.*]]:{{[0-9]+}} = dsnn.layer "h.0"
// CHECK:           %[[E:.*]], %[[S:.*]], %{{.*}} = dsnn.moe_route
// CHECK:           dsnn.yield %{{.*}}, %[[AUX:[^,]*]], {{.*}}%[[E]], %[[S]]
// CHECK:         %[[C:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %c12 step %{{.*}} iter_args(%[[CS:.*]] = %{{.*}}, %[[DS:.*]] = %{{.*}}) -> (tensor<4xf32>, tensor<f32>)
// CHECK:           %[[EI:.*]] = tensor.extract %[[L]]#{{[0-9]+}}
// CHECK:           %[[SI:.*]] = tensor.extract %[[L]]#{{[0-9]+}}
// CHECK:           tensor.insert %{{.*}} into %[[CS]]
// CHECK:           arith.cmpi slt, %[[SI]]
// CHECK:         return {{.*}}, %[[C]]#0, %[[C]]#1, %[[L]]#1

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    tensor<4xf32> {dstrain.metric = "moe/h.0/exp_counts"}, tensor<f32> {dstrain.metric = "moe/h.0/dropped"}, tensor<f32> {dstrain.metric = "moe/h.0/aux_loss"})
// CHECK:         %[[LOOP:.*]]:6 = scf.for
// CHECK:           %[[R:.*]]:6 = func.call @forward_backward
// CHECK:           %[[SUM:.*]] = dsnn.add %{{.*}}, %[[R]]#3 : tensor<4xf32>
// CHECK:           scf.yield {{.*}}, %[[SUM]],
// CHECK:         %[[CR:.*]] = dsdist.all_reduce sum %[[LOOP]]#3 over ["dp"]
// CHECK:         %[[DR:.*]] = dsdist.all_reduce sum %[[LOOP]]#4 over ["dp"]
// CHECK:         %[[MEAN:.*]] = dsnn.mul %[[LOOP]]#5, %{{.*}} : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK:         %[[AUXR:.*]] = dsdist.all_reduce avg %[[MEAN]] over ["dp"]
// CHECK:         return {{.*}}, %[[CR]], %[[DR]], %[[AUXR]]
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
func.func @forward(%wg: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "gate", init = normal, std = 0.02>},
                   %w1: tensor<4x8x8xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 0.02, expert = 0>},
                   %x: tensor<2x3x8xf32>) -> tensor<f32> {
  %out:2 = dsnn.layer "h.0"("Block") -> tensor<2x3x8xf32>, tensor<f32> {
    %y, %aux = dsnn.moe %x, %wg experts(%w1 : tensor<4x8x8xf32>)
        {num_experts = 4 : i64, k = 2 : i64, capacity_factor = 1.0 : f64}
        : tensor<2x3x8xf32>, tensor<4x8xf32> -> tensor<2x3x8xf32>, tensor<f32> {
      ^bb0(%tok: tensor<4x4x8xf32>, %a: tensor<4x8x8xf32>):
        %h = dsnn.batch_matmul %tok, %a {transpose_b} : tensor<4x4x8xf32>, tensor<4x8x8xf32> -> tensor<4x4x8xf32>
        dsnn.yield %h : tensor<4x4x8xf32>
    }
    dsnn.yield %y, %aux : tensor<2x3x8xf32>, tensor<f32>
  }
  %s = dsnn.reduce_sum %out#0 dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  %l = dsnn.add %s, %out#1 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}
}
