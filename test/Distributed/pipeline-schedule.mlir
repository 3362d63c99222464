// Each stage's @train_step is its 1F1B stream (DeepSpeed's TrainSchedule
// for 2 stages and 2 micro-batches), on the model of pipeline-split.mlir:
// layers [l0, l1 | head], the head reading l0's weight again.
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" | FileCheck %s --check-prefix=S0
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" | FileCheck %s --check-prefix=S1
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2 schedule=gpipe" | FileCheck %s --check-prefix=GPIPE
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" --ds-clip-grads="max-norm=1.0" | FileCheck %s --check-prefix=NORM0
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" --ds-clip-grads="max-norm=1.0" | FileCheck %s --check-prefix=NORM1
// RUN: not ds-opt %s --ds-autodiff --ds-pipeline-schedule 2>&1 | FileCheck %s --check-prefix=UNSPLIT

// Stage 0: load 0, forward 0 | send act 0 | load 1, forward 1 |
// recv grad 0, send act 1, backward 0 | - | recv grad 1, backward 1, then
// the tied weight's gradient summed with stage 1's (sent first here).
// S0:      module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 1>
// S0-LABEL: func.func @train_step(
// S0-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S0-SAME:    %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1"
// S0-SAME:    %[[X:[^:]*]]: tensor<2x2x4xf32> {dsnn.batch = "inputs"})
// S0-SAME:    -> (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>)
// S0-SAME:    dstrain.gradient_accumulation_steps = 2
// S0:        %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0]
// S0:        %[[F0:.*]]:{{[0-9]+}} = call @stage_forward(
// S0:        dsdist.send %[[F0]]#0 to "pp" offset 1
// S0:        %[[X1:.*]] = tensor.extract_slice %[[X]][1, 0, 0]
// S0:        %[[F1:.*]]:{{[0-9]+}} = call @stage_forward(
// S0:        %[[G0:.*]] = dsdist.recv from "pp" offset 1 : tensor<2x4xf32>
// S0:        dsdist.send %[[F1]]#0 to "pp" offset 1
// S0:        call @stage_backward(%[[G0]],
// S0:        %[[G1:.*]] = dsdist.recv from "pp" offset 1 : tensor<2x4xf32>
// S0:        call @stage_backward(%[[G1]],
// S0:        dsdist.send %[[MINE:.*]] to "pp" offset 1 : tensor<4x4xf32>
// S0:        %[[THEIRS:.*]] = dsdist.recv from "pp" offset 1 : tensor<4x4xf32>
// S0:        dsnn.add %[[MINE]], %[[THEIRS]]
// S0:        dsdist.broadcast %{{.*}} over ["pp"] root 1 : tensor<f32>
// S0-NOT:    dsdist.send
// S0:        return

// Stage 1: recv act 0, load 0, forward 0 | backward 0 | send grad 0,
// recv act 1, load 1, forward 1 | backward 1 | send grad 1; the tied
// gradient is received first and added in the same order.
// S1:       func.func private @stage_forward(
// S1:       func.func private @stage_backward(
// S1-LABEL: func.func @train_step(
// S1-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S1-SAME:    %[[Y:[^:]*]]: tensor<2x2x4xf32> {dsnn.batch = "targets"})
// S1-SAME:    -> (tensor<f32>, tensor<4x4xf32>)
// S1:        %[[A0:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// S1:        tensor.extract_slice %[[Y]][0, 0, 0]
// S1:        %[[F0:.*]]:{{[0-9]+}} = call @stage_forward(%[[A0]],
// S1:        %[[B0:.*]]:2 = call @stage_backward(
// S1:        dsdist.send %[[B0]]#1 to "pp" offset -1 : tensor<2x4xf32>
// S1:        %[[A1:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// S1:        tensor.extract_slice %[[Y]][1, 0, 0]
// S1:        call @stage_forward(%[[A1]],
// S1:        %[[B1:.*]]:2 = call @stage_backward(
// S1:        dsdist.send %[[B1]]#1 to "pp" offset -1 : tensor<2x4xf32>
// S1:        %[[THEIRS:.*]] = dsdist.recv from "pp" offset -1 : tensor<4x4xf32>
// S1:        dsdist.send %[[MINE:.*]] to "pp" offset -1 : tensor<4x4xf32>
// S1:        dsnn.add %[[THEIRS]], %[[MINE]]
// S1:        %[[MEAN:.*]] = dsnn.mul %{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>
// S1:        dsdist.broadcast %[[MEAN]] over ["pp"] root 1 : tensor<f32>

// GPipe on the last stage: both forwards (each with its backward's
// inputs saved), then the backwards in reverse order.
// GPIPE-LABEL: func.func @train_step(
// GPIPE:        call @stage_forward(
// GPIPE:        call @stage_forward(
// GPIPE:        %[[B1:.*]]:2 = call @stage_backward(
// GPIPE:        dsdist.send %[[B1]]#1 to "pp" offset -1
// GPIPE:        %[[B0:.*]]:2 = call @stage_backward(
// GPIPE:        dsdist.send %[[B0]]#1 to "pp" offset -1

// The norm is the model's: each stage's sum of squares, the tied weight
// counted on stage 0 only, summed over "pp".
// NORM0:      %[[P:.*]] = dstrain.global_norm %{{.*}}, %{{.*}} squared : tensor<4x4xf32>, tensor<4x4xf32>
// NORM0-NEXT: %[[T:.*]] = dsdist.all_reduce sum %[[P]] over ["pp"] : tensor<f32>
// NORM0-NEXT: %[[N:.*]] = math.sqrt %[[T]]
// NORM0-NEXT: dstrain.clip_grad_norm {{.*}} max_norm 1.000000e+00 norm %[[N]]
// Stage 1 holds only the tied weight, which stage 0 counts: it adds 0.
// NORM1-NOT:  dstrain.global_norm
// NORM1:      dsdist.all_reduce sum %{{.*}} over ["pp"] : tensor<f32>
// NORM1-NEXT: math.sqrt

// UNSPLIT: error: ds-pipeline-schedule: the module has no dsdist.pipeline = {stage, stages}; run ds-pipeline-split first

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
