// A value read further on than the next stage is relayed: each stage
// between receives it and passes it on as it is (an MoE layer's aux loss,
// which the last stage adds to the loss; here a skip connection over l1).
// Stages exchange values with their neighbours only, so this is what lets
// any layer's extra result reach the loss.
// RUN: ds-opt %s --ds-pipeline-split="stages=3 stage=0 partition=uniform" 2>/dev/null | FileCheck %s --check-prefix=S0
// RUN: ds-opt %s --ds-pipeline-split="stages=3 stage=1 partition=uniform" 2>/dev/null | FileCheck %s --check-prefix=S1
// RUN: ds-opt %s --ds-pipeline-split="stages=3 stage=2 partition=uniform" 2>/dev/null | FileCheck %s --check-prefix=S2

// S0-LABEL: func.func @forward(
// S0-SAME:    -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64})
// S0:         %[[H0:.*]] = dsnn.layer "l0"
// S0:         return %[[H0]]

// Stage 1 receives h0, reads it, and passes it on beside its own h1.
// S1-LABEL: func.func @forward(
// S1-SAME:    %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1"
// S1-SAME:    %[[IN:[^:]*]]: tensor<2x4xf32> {dsdist.pipe_input = 0 : i64})
// S1-SAME:    -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64}, tensor<2x4xf32> {dsdist.pipe_output = 1 : i64})
// S1:         %[[H1:.*]] = dsnn.layer "l1"
// S1:         return %[[IN]], %[[H1]]

// Stage 2 gets both, in the body's order: h0 first, then h1.
// S2-LABEL: func.func @forward(
// S2-SAME:    %[[H0:[^:]*]]: tensor<2x4xf32> {dsdist.pipe_input = 0 : i64}
// S2-SAME:    %[[H1:[^:]*]]: tensor<2x4xf32> {dsdist.pipe_input = 1 : i64}
// S2:         dsnn.add %[[H1]], %[[H0]]
// Three stages over three layers: l0's output skips stage 1.
module {
  func.func @forward(%w0: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0", init = zeros>},
                     %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = zeros>},
                     %x: tensor<2x4xf32> {dsnn.batch = "inputs"},
                     %y: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
    %h0 = dsnn.layer "l0"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %h1 = dsnn.layer "l1"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h0, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %r = dsnn.add %h1, %h0 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %h = dsnn.linear %r, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

