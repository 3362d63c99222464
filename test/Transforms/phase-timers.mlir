// RUN: echo '{"train_batch_size": 4, "optimizer": {"type": "AdamW"}}' > %t.gas1.json
// RUN: ds-import --spec %ds_src/examples/models/mlp.json | ds-opt --ds-training-pipeline='config=%t.gas1.json' | ds-opt --ds-phase-timers | FileCheck %s
// RUN: echo '{"train_batch_size": 8, "gradient_accumulation_steps": 2, "wall_clock_breakdown": true}' > %t.json
// RUN: ds-import --spec %ds_src/examples/models/mlp.json | ds-opt --ds-training-pipeline='config=%t.json' | FileCheck %s --check-prefix=LOOP
// RUN: ds-import --spec %ds_src/examples/models/mlp.json | ds-opt --ds-training-pipeline='config=%S/Inputs/train-adamw.json' | FileCheck %s --check-prefix=OFF
// RUN: not ds-opt %s --ds-phase-timers 2>&1 | FileCheck %s --check-prefix=ERR

// Forward from the entry of @forward_backward, backward right after the
// loss; in @train_step reduction after the micro-batches, optimizer before
// the first dstrain op after them, none before the return.
// CHECK: func.func private @dsrt_phase_begin(i32)
// CHECK-LABEL: func.func @forward_backward(
// CHECK-NEXT: %[[FWD:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @dsrt_phase_begin(%[[FWD]]) : (i32) -> ()
// CHECK: %[[LOSS:.*]] = dsnn.cross_entropy
// CHECK-NEXT: %[[BWD:.*]] = arith.constant 2 : i32
// CHECK-NEXT: call @dsrt_phase_begin(%[[BWD]]) : (i32) -> ()
// CHECK-NOT: dsrt_phase_begin
// CHECK: return %[[LOSS]]
// CHECK-LABEL: func.func @train_step(
// CHECK: call @forward_backward
// CHECK-NEXT: %[[RED:.*]] = arith.constant 3 : i32
// CHECK-NEXT: call @dsrt_phase_begin(%[[RED]]) : (i32) -> ()
// CHECK: %[[OPT:.*]] = arith.constant 4 : i32
// CHECK-NEXT: call @dsrt_phase_begin(%[[OPT]]) : (i32) -> ()
// CHECK-NEXT: dstrain.
// CHECK: %[[NONE:.*]] = arith.constant 0 : i32
// CHECK-NEXT: call @dsrt_phase_begin(%[[NONE]]) : (i32) -> ()
// CHECK-NEXT: return

// wall_clock_breakdown puts the pass in the training pipeline; with
// accumulation the reduction mark follows the micro-batch loop.
// LOOP-LABEL: func.func @train_step(
// LOOP: scf.for
// LOOP: call @forward_backward
// LOOP: scf.yield
// LOOP-NEXT: }
// LOOP-NEXT: %{{.*}} = arith.constant 3 : i32
// LOOP-NEXT: call @dsrt_phase_begin
// OFF-NOT: dsrt_phase_begin

// ERR: error: ds-phase-timers: needs @train_step and @forward_backward (run it after the training passes)
module {
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    return %x : tensor<f32>
  }
}
