// A hand-written model contract may leave its batch arguments unnamed (no
// dsnn.batch), one of them not per-sample (gpt-tiny.mlir's positions).
// Each is its own argument of the stage's @train_step, with the micro-batch
// dim in front, and each micro-batch's call reads its own slice of each.
// Interleaved chunks need names to share an argument: refused without.
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" | FileCheck %s
// RUN: not ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform virtual-stages=2" --ds-autodiff="entry=forward_chunk0 result=forward_backward_chunk0" --ds-autodiff="entry=forward_chunk1 result=forward_backward_chunk1" --ds-pipeline-schedule="micro-batches=2 schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param
// CHECK-SAME:    %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param
// CHECK-SAME:    %[[X:[^:]*]]: tensor<2x2x4xf32>, %[[B:[^:]*]]: tensor<2x4xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0] [1, 2, 4] [1, 1, 1] : tensor<2x2x4xf32> to tensor<2x4xf32>
// CHECK:         %[[B0:.*]] = tensor.extract_slice %[[B]][0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
// CHECK:         call @stage_forward(%[[X0]], %[[W0]], %[[B0]], %[[W1]])
// CHECK:         %[[X1:.*]] = tensor.extract_slice %[[X]][1, 0, 0]
// CHECK:         %[[B1:.*]] = tensor.extract_slice %[[B]][1, 0]
// CHECK:         call @stage_forward(%[[X1]], %[[W0]], %[[B1]], %[[W1]])

// INTERLEAVED: error: ds-pipeline-schedule: batch argument 0 of an interleaved chunk has no dsnn.batch name

module attributes {dsnn.init_seed = 0 : i64} {
  func.func @forward(%w0: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0", init = normal, std = 2.0e-02>},
                     %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 2.0e-02>},
                     %w2: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w2", init = normal, std = 2.0e-02>},
                     %w3: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w3", init = normal, std = 2.0e-02>},
                     %x: tensor<2x4xf32>, %b: tensor<4xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
    %h0 = dsnn.layer "l0"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %c = dsnn.add %a, %b : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
      dsnn.yield %c : tensor<2x4xf32>
    }
    %h1 = dsnn.layer "l1"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h0, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %h2 = dsnn.layer "l2"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h1, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %h3 = dsnn.layer "l3"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h2, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      dsnn.yield %a : tensor<2x4xf32>
    }
    %l = dsnn.mse_loss %h3, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
