// RUN: ds-opt %s --ds-autodiff --ds-checkpoint-activations=interval=2 | FileCheck %s
// RUN: ds-opt %s --ds-autodiff --ds-checkpoint-activations=interval=0 | FileCheck %s --check-prefix=OFF
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" --ds-autodiff --ds-checkpoint-activations=interval=1 --ds-pipeline-schedule="micro-batches=2" | FileCheck %s --check-prefix=STAGE
// RUN: ds-opt %s --ds-pipeline-split="stages=2 stage=0 partition=uniform" --ds-autodiff --ds-pipeline-schedule="micro-batches=2" | FileCheck %s --check-prefix=NOCKPT
// RUN: not ds-opt %s --ds-checkpoint-activations=interval=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// Three layers, each saving its gelu input (#1) for its backward. With
// interval 2 the blocks are [l0, l1] and [l2]: each block is copied
// (`recompute`) right before its first backward layer, from the block's
// input (%x for the first, h1 for the second), and the backward reads only
// the copies; the forward layers' #1 results are read by nothing.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:    %[[W0:[^:]*]]: tensor<4x4xf32> {dsnn.param
// CHECK-SAME:    %[[W1:[^:]*]]: tensor<4x4xf32> {dsnn.param
// CHECK-SAME:    %[[W2:[^:]*]]: tensor<4x4xf32> {dsnn.param
// CHECK-SAME:    %[[X:[^:]*]]: tensor<2x4xf32> {dsnn.batch = "inputs"}
// CHECK-SAME:    %[[KEY:[^:]*]]: tensor<i64> {dsnn.rng_key}
// CHECK:         %[[H0:.*]]:2 = dsnn.layer "l0"("Block")
// CHECK:         %[[H1:.*]]:2 = dsnn.layer "l1"("Block")
// CHECK-NEXT:      dsnn.linear %[[H0]]#0, %[[W1]]
// CHECK:         %[[H2:.*]]:2 = dsnn.layer "l2"("Block")
// CHECK-NEXT:      dsnn.linear %[[H1]]#0, %[[W2]]
// CHECK:         %[[LOSS:.*]] = dsnn.mse_loss %[[H2]]#0
// CHECK-NOT:     %[[H2]]#1
// CHECK:         %[[R2:.*]]:2 = dsnn.layer "l2"("Block") {{.*}} attributes {recompute} {
// CHECK-NEXT:      dsnn.linear %[[H1]]#0, %[[W2]]
// CHECK-NEXT:      dsnn.gelu
// CHECK-NEXT:      dsnn.dropout %{{.*}} key %[[KEY]] p 1.000000e-01 {seed = 3 : i64, stream = 2 : i64}
// CHECK:         %[[D2:.*]]:2 = dsnn.layer "l2.backward"("Block") {{.*}} attributes {backward} {
// CHECK:           dsnn.gelu_grad %[[R2]]#1,
// CHECK-NOT:     %[[H0]]#1
// CHECK-NOT:     %[[H1]]#1
// CHECK:         %[[R0:.*]]:2 = dsnn.layer "l0"("Block") {{.*}} attributes {recompute} {
// CHECK-NEXT:      dsnn.linear %[[X]], %[[W0]]
// CHECK:         %[[R1:.*]]:2 = dsnn.layer "l1"("Block") {{.*}} attributes {recompute} {
// CHECK-NEXT:      dsnn.linear %[[R0]]#0, %[[W1]]
// CHECK:         %[[D1:.*]]:2 = dsnn.layer "l1.backward"("Block") {{.*}} attributes {backward} {
// CHECK:           dsnn.gelu_grad %[[R1]]#1,
// CHECK:           dsnn.matmul %{{.*}}, %[[R0]]#0 {transpose_a}
// CHECK:         %[[D0:.*]] = dsnn.layer "l0.backward"("Block") {{.*}} attributes {backward} {
// CHECK:           dsnn.gelu_grad %[[R0]]#1,
// CHECK-NOT:     %[[H0]]#1
// CHECK-NOT:     %[[H1]]#1
// CHECK:         return %[[LOSS]], %[[D0]], %[[D1]]#1, %[[D2]]#1

// Interval 0 leaves the step as autodiff built it.
// OFF-LABEL: func.func @forward_backward(
// OFF-NOT:     recompute
// OFF:         dsnn.gelu_grad %0#1,

// A pipeline stage (l0, l1 of 2 stages) at interval 1: the cut saves the
// blocks' inputs only (l1's input h0; l0's input is the batch), and the
// copies run in @stage_backward. The stage's output stays the forward's.
// STAGE-LABEL: func.func private @stage_forward(
// STAGE-SAME:    -> (tensor<2x4xf32>, tensor<2x4xf32>)
// STAGE-NOT:     recompute
// STAGE:         %[[H0:.*]]:2 = dsnn.layer "l0"("Block")
// STAGE:         %[[H1:.*]]:2 = dsnn.layer "l1"("Block")
// STAGE:         return %[[H1]]#0, %[[H0]]#0 :
// STAGE-LABEL: func.func private @stage_backward(
// STAGE:         %[[R1:.*]]:2 = dsnn.layer "l1"("Block") {{.*}} attributes {recompute}
// STAGE:         dsnn.layer "l1.backward"
// STAGE-NEXT:      dsnn.dropout
// STAGE-NEXT:      dsnn.gelu_grad %[[R1]]#1,
// STAGE:         %[[R0:.*]]:2 = dsnn.layer "l0"("Block") {{.*}} attributes {recompute}
// STAGE:         dsnn.layer "l0.backward"
// STAGE-NEXT:      dsnn.dropout
// STAGE-NEXT:      dsnn.gelu_grad %[[R0]]#1,
// STAGE-LABEL: func.func @train_step(

// Without checkpointing the same stage saves both gelu inputs as well.
// NOCKPT-LABEL: func.func private @stage_forward(
// NOCKPT-SAME:    -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)

// NEGATIVE: error: ds-checkpoint-activations: interval -1 is negative; use 0 (off) or the number of layers per block

module attributes {dsnn.init_seed = 3 : i64} {
  func.func @forward(%w0: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w0", init = normal, std = 2.0e-02>},
                     %w1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 2.0e-02>},
                     %w2: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w2", init = normal, std = 2.0e-02>},
                     %x: tensor<2x4xf32> {dsnn.batch = "inputs"},
                     %y: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
    %h0 = dsnn.layer "l0"("Block") -> tensor<2x4xf32> {
      %a = dsnn.linear %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      %c = dsnn.dropout %b p 0.1 : tensor<2x4xf32>
      dsnn.yield %c : tensor<2x4xf32>
    }
    %h1 = dsnn.layer "l1"("Block") -> tensor<2x4xf32> {
      %a = dsnn.linear %h0, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      %c = dsnn.dropout %b p 0.1 : tensor<2x4xf32>
      dsnn.yield %c : tensor<2x4xf32>
    }
    %h2 = dsnn.layer "l2"("Block") -> tensor<2x4xf32> {
      %a = dsnn.linear %h1, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %b = dsnn.gelu %a : tensor<2x4xf32>
      %c = dsnn.dropout %b p 0.1 : tensor<2x4xf32>
      dsnn.yield %c : tensor<2x4xf32>
    }
    %l = dsnn.mse_loss %h2, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
