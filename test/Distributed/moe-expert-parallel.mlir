// RUN: ds-opt %s --ds-moe-expert-parallel="ep-size=2 dp-size=4" | FileCheck %s --implicit-check-not="tensor<4x8x8xf32>"
// RUN: ds-opt %s --ds-moe-expert-parallel="ep-size=2 dp-size=4" --ds-autodiff | FileCheck %s --check-prefix=GRAD --implicit-check-not="tensor<4x8x8xf32>"

// Four experts over an expert-parallel group of two ranks (four
// data-parallel ranks: two groups). Each rank holds experts [2r, 2r + 2) of
// w1 (no rank's program names the whole [4, 8, 8] tensor); its own tokens
// are routed exactly as with one rank (capacity 4 from its 6 tokens), the
// dispatched [4, 4, 8] go through an all-to-all over "ep", the two local
// experts run once per source rank, and an all-to-all returns the outputs.

// CHECK:       module attributes {dsdist.grid = #dsdist.grid<dp = 2, ep = 2>}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[WG:.*]]: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "gate"
// CHECK-SAME:    %[[W1:.*]]: tensor<2x8x8xf32> {dsdist.experts = #dsdist.sharding<axes = ["ep"], shape = [4, 8, 8]>, dsnn.param = #dsnn.param<name = "w1"
// CHECK:         %[[P:.*]] = dsnn.softmax
// CHECK:         %[[E:.*]], %[[S:.*]], %{{.*}} = dsnn.moe_route %[[P]] {capacity = 4 : i64, k = 2 : i64}
// CHECK:         %[[D:.*]] = dsnn.moe_dispatch %{{.*}}, %[[E]], %[[S]] : tensor<6x8xf32>, tensor<6x2xi64> -> tensor<4x4x8xf32>
// CHECK-NEXT:    %[[R:.*]] = dsdist.all_to_all %[[D]] over ["ep"] split 0 concat 0 : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
// CHECK-NEXT:    %[[R0:.*]]:2 = dsnn.split %[[R]] dim 0 : tensor<4x4x8xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>
// CHECK-NEXT:    %[[Y0:.*]] = dsnn.batch_matmul %[[R0]]#0, %[[W1]] {transpose_b} : tensor<2x4x8xf32>, tensor<2x8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[Y1:.*]] = dsnn.batch_matmul %[[R0]]#1, %[[W1]] {transpose_b} : tensor<2x4x8xf32>, tensor<2x8x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[Y:.*]] = dsnn.concat %[[Y0]], %[[Y1]] dim 0 : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<4x4x8xf32>
// CHECK-NEXT:    %[[O:.*]] = dsdist.all_to_all %[[Y]] over ["ep"] split 0 concat 0 : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
// CHECK-NEXT:    dsnn.moe_gather %[[O]], %[[E]], %[[S]] : tensor<4x4x8xf32>, tensor<6x2xi64> -> tensor<6x2x8xf32>

// The backward mirrors the exchange: the combine's cotangent goes to the
// experts' ranks, and each source rank's block adds its part to this rank's
// w1 slice (the tokens are a batch input here: no cotangent goes back).
// GRAD-LABEL: func.func @forward_backward(
// GRAD-SAME:    tensor<2x8x8xf32>
// GRAD-COUNT-2: dsdist.all_to_all
// GRAD:         dsnn.moe_dispatch %{{.*}} : tensor<6x2x8xf32>, tensor<6x2xi64> -> tensor<4x4x8xf32>
// GRAD-NEXT:    %[[DR:.*]] = dsdist.all_to_all %{{.*}} over ["ep"] split 0 concat 0 : tensor<4x4x8xf32> -> tensor<4x4x8xf32>
// GRAD-NEXT:    %[[DS:.*]]:2 = dsnn.split %[[DR]] dim 0
// GRAD-NEXT:    %[[DW1:.*]] = dsnn.batch_matmul %[[DS]]#1, %{{.*}} {transpose_a} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
// GRAD-NEXT:    %[[DW0:.*]] = dsnn.batch_matmul %[[DS]]#0, %{{.*}} {transpose_a} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x8x8xf32>
// GRAD-NEXT:    %[[DW:.*]] = dsnn.add %[[DW1]], %[[DW0]] : tensor<2x8x8xf32>
// GRAD:         return {{.*}}, %[[DW]] : tensor<f32>, tensor<4x8xf32>, tensor<2x8x8xf32>
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
