// The interleaved schedule on a four-layer model with a tied head, cut
// uniformly into 2 stages x 2 virtual stages: DeepSpeed's
// partition_uniform(5, 4) = [0, 2, 3, 4, 5] gives the model chunks
// [l0 l1 | l2 | l3 | head], chunk c on stage c mod 2 (Megatron's
// round-robin): stage 0 holds chunks 0 and 2, stage 1 chunks 1 and 3.
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 virtual-stages=2 partition=uniform" | FileCheck %s --check-prefix=SPLIT
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 virtual-stages=2 partition=uniform" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 virtual-stages=2 partition=uniform" --ds-autodiff="entry=forward_chunk0 result=forward_backward_chunk0" --ds-autodiff="entry=forward_chunk1 result=forward_backward_chunk1" --ds-pipeline-schedule="micro-batches=2 schedule=interleaved" 2>/dev/null | FileCheck %s --check-prefix=S0
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=1 virtual-stages=2 partition=uniform" --ds-autodiff="entry=forward_chunk0 result=forward_backward_chunk0" --ds-autodiff="entry=forward_chunk1 result=forward_backward_chunk1" --ds-pipeline-schedule="micro-batches=2 schedule=interleaved" 2>/dev/null | FileCheck %s --check-prefix=S1
// RUN: not ds-opt %s --ds-pipeline-split="stages=2 stage=0 virtual-stages=2 partition=uniform" --ds-autodiff="entry=forward_chunk0 result=forward_backward_chunk0" --ds-autodiff="entry=forward_chunk1 result=forward_backward_chunk1" --ds-pipeline-schedule="micro-batches=2" 2>&1 | FileCheck %s --check-prefix=NOT-1F1B
// RUN: not ds-opt %s --ds-pipeline-split="stages=2 stage=0 virtual-stages=3 partition=uniform" 2>&1 | FileCheck %s --check-prefix=TOO-MANY

// REMARK: remark: ds-pipeline-split: uniform over 2 stages x 2 virtual stages, parts [0, 2, 3, 4, 5]; chunk 0 (stage 0): l0 l1; chunk 1 (stage 1): l2; chunk 2 (stage 0): l3; chunk 3 (stage 1): head

// Stage 0's chunks: the model's chunk 0 (the inputs, w0 and w1) and chunk
// 2 (w3, fed by chunk 1 on stage 1); both send on.
// SPLIT:      dsdist.pipeline = {shared = {w0 = array<i64: 0, 1>}, stage = 0 : i64, stages = 2 : i64, virtual_stages = 2 : i64}
// SPLIT-LABEL: func.func @forward_chunk0(
// SPLIT-SAME:    {dsnn.param = #dsnn.param<name = "w0"
// SPLIT-SAME:    {dsnn.param = #dsnn.param<name = "w1"
// SPLIT-SAME:    {dsnn.batch = "inputs"})
// SPLIT-SAME:    -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64})
// SPLIT:        dsnn.layer "l0"
// SPLIT:        dsnn.layer "l1"
// SPLIT-LABEL: func.func @forward_chunk1(
// SPLIT-SAME:    {dsnn.param = #dsnn.param<name = "w3"
// SPLIT-SAME:    {dsdist.pipe_input = 0 : i64})
// SPLIT-SAME:    -> (tensor<2x4xf32> {dsdist.pipe_output = 0 : i64})
// SPLIT-NOT:    dsnn.layer "l2"
// SPLIT:        dsnn.layer "l3"

// Stage 0 warms up with (p - s - 1) * 2 + (v - 1) * p = 4 forwards, all of
// them (m = p): chunk 0 on micro-batches 0 and 1, then chunk 2 on what
// stage 1 sends around the ring (recv offset -1 is stage 1), then the
// backwards, chunks in reverse. Its step takes the union of its chunks'
// parameters and batch arguments.
// S0-LABEL: func.func @train_step(
// S0-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S0-SAME:    %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1"
// S0-SAME:    %[[W3:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w3"
// S0-SAME:    %[[X:[^:]*]]: tensor<2x2x4xf32> {dsnn.batch = "inputs"})
// S0-SAME:    -> (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
// S0:        %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0]
// S0:        %[[F00:.*]]:3 = call @stage_forward_chunk0(%[[X0]], %[[W0]], %[[W1]])
// S0:        dsdist.send %[[F00]]#0 to "pp" offset 1
// S0:        call @stage_forward_chunk0(
// S0:        dsdist.send
// S0:        %[[A0:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// S0:        call @stage_forward_chunk1(%[[A0]], %[[W3]])
// S0:        dsdist.send {{.*}} to "pp" offset 1
// S0:        %[[A1:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// S0:        call @stage_forward_chunk1(%[[A1]], %[[W3]])
// S0:        dsdist.send {{.*}} to "pp" offset 1
// S0:        dsdist.recv from "pp" offset 1
// S0:        %[[B10:.*]]:2 = call @stage_backward_chunk1(
// S0:        dsdist.send %[[B10]]#1 to "pp" offset -1
// S0:        call @stage_backward_chunk1(
// S0:        call @stage_backward_chunk0(
// S0:        call @stage_backward_chunk0(
// S0-NOT:    call @stage_
// The tied weight's gradient (chunk 0 here, chunk 3 on stage 1) is summed
// between the stages as with one chunk per stage.
// S0:        dsdist.send %[[MINE:.*]] to "pp" offset 1 : tensor<4x4xf32>
// S0:        %[[THEIRS:.*]] = dsdist.recv from "pp" offset 1 : tensor<4x4xf32>
// S0:        dsnn.add %[[MINE]], %[[THEIRS]]
// S0:        dsdist.broadcast %{{.*}} over ["pp"] root 1 : tensor<f32>

// Stage 1 holds chunks 1 (w2) and 3 (the head: the tied w0 and the
// targets); chunk 1 sends on around the ring to stage 0 (offset 1), and
// only chunk 3 adds to the loss.
// S1-LABEL: func.func @train_step(
// S1-SAME:    %[[W2:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w2"
// S1-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0"
// S1-SAME:    %[[Y:[^:]*]]: tensor<2x2x4xf32> {dsnn.batch = "targets"})
// S1:        %[[A0:.*]] = dsdist.recv from "pp" offset -1 : tensor<2x4xf32>
// S1:        %[[F10:.*]]:2 = call @stage_forward_chunk0(%[[A0]], %[[W2]])
// S1:        dsdist.send %[[F10]]#0 to "pp" offset 1
// S1:        %[[Y0:.*]] = tensor.extract_slice %[[Y]][0, 0, 0]
// S1:        %[[F30:.*]]:2 = call @stage_forward_chunk1(%{{.*}}, %[[W0]], %[[Y0]])
// S1:        dsnn.add %{{.*}}, %[[F30]]#0 : tensor<f32>
// S1:        call @stage_backward_chunk1(
// S1:        call @stage_backward_chunk1(
// S1:        call @stage_backward_chunk0(
// S1:        call @stage_backward_chunk0(
// S1:        %[[THEIRS:.*]] = dsdist.recv from "pp" offset -1 : tensor<4x4xf32>
// S1:        dsdist.send %[[MINE:.*]] to "pp" offset -1 : tensor<4x4xf32>
// S1:        dsnn.add %[[THEIRS]], %[[MINE]]

// NOT-1F1B: error: ds-pipeline-schedule: schedule "1f1b" on a module split into 2 model chunk(s) per stage; the interleaved schedule and only it needs ds-pipeline-split with virtual-stages >= 2
// TOO-MANY: error: pipeline: 2 stages x 3 virtual stages (= 6 model chunks) but the model has only 5 layers to cut; every stage needs at least one layer, so use at most 5 chunks

module attributes {dsnn.init_seed = 0 : i64} {
  func.func @forward(%w0: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0", init = normal, std = 2.0e-02, tied = "w0">},
                     %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 2.0e-02>},
                     %w2: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w2", init = normal, std = 2.0e-02>},
                     %w3: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w3", init = normal, std = 2.0e-02>},
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
    %h2 = dsnn.layer "l2"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h1, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      dsnn.yield %b : tensor<2x4xf32>
    }
    %h3 = dsnn.layer "l3"("Lin") -> tensor<2x4xf32> {
      %a = dsnn.linear %h2, %w3 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      dsnn.yield %b : tensor<2x4xf32>
    }
    %h = dsnn.linear %h3, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %s = dsnn.mul %h, %half : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
    %l = dsnn.mse_loss %s, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
