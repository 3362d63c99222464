// A three-layer model whose head reads the first layer's weight again (a
// tied embedding and LM head), cut into two stages uniformly: layers
// [l0, l1 | head] (DeepSpeed's partition_uniform(3, 2) = [0, 2, 3]).
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" | FileCheck %s --check-prefix=S0
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 partition=uniform" | FileCheck %s --check-prefix=S1
// RUN: ds-opt %s --ds-pipeline-split="stages=1" | FileCheck %s --check-prefix=ONE
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 partition=uniform" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK --implicit-check-not="see current operation"

// The partition, as DeepSpeed's boundary list and each stage's layers.
// REMARK: remark: ds-pipeline-split: uniform over 2 stages, parts [0, 2, 3]; stage 0: l0 l1; stage 1: head

// Stage 0 keeps l0 and l1, their weights and the input; it returns what the
// head reads.
// S0:      module attributes {dsdist.pipeline = {shared = {w0 = array<i64: 0, 1>}, stage = 0 : i64, stages = 2 : i64}
// S0-LABEL: func.func @forward(
// S0-SAME:    %{{.*}}: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S0-SAME:    %{{.*}}: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1"
// S0-SAME:    %{{.*}}: tensor<2x4xf32> {dsnn.batch = "inputs"})
// S0-SAME:    -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64})
// S0:        dsnn.layer "l0"
// S0:        dsnn.layer "l1"
// S0-NOT:    dsnn.mse_loss
// S0:        return

// Stage 1 is the head: the tied weight again, the activation as its pipe
// input, the targets; it returns the loss. The constant is copied, not
// received.
// S1:      module attributes {dsdist.pipeline = {shared = {w0 = array<i64: 0, 1>}, stage = 1 : i64, stages = 2 : i64}
// S1-LABEL: func.func @forward(
// S1-SAME:    %[[W0:.*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S1-SAME:    %[[X:.*]]: tensor<2x4xf32> {dsdist.pipe_input = 0 : i64}
// S1-SAME:    %[[Y:.*]]: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32>
// S1-NOT:    dsnn.layer
// S1:        %[[C:.*]] = arith.constant
// S1:        %[[H:.*]] = dsnn.linear %[[X]], %[[W0]]
// S1:        %[[S:.*]] = dsnn.mul %[[H]], %[[C]]
// S1:        %[[L:.*]] = dsnn.mse_loss %[[S]], %[[Y]]
// S1:        return %[[L]]

// ONE-NOT: dsdist.pipeline
// ONE: dsnn.layer "l0"

module attributes {dsnn.init_seed = 0 : i64} {
  func.func @forward(%w0: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0", init = normal, std = 2.0e-02, tied = "w0">},
                     %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 2.0e-02>},
                     %x: tensor<2x4xf32> {dsnn.batch = "inputs"},
                     %y: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
    %half = arith.constant dense<5.0e-01> : tensor<f32>
    %h0 = dsnn.layer "l0"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %h1 = dsnn.layer "l1"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h0, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      dsnn.yield %b : tensor<2x4xf32>
    }
    %h = dsnn.linear %h1, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %s = dsnn.mul %h, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %l = dsnn.mse_loss %s, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
