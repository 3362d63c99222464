// The GPT step with gradient_accumulation_steps 2, through the real
// pipeline: the micro-batch loop allocates nothing (its temporaries, the
// forward/backward call's gradient out-params and the accumulators, two
// slots each, are all in the arena), and neither does the rest of the step.
// Each accumulation writes over the gradient the call just made
// (ds-elementwise-in-place), so the call's out-params are the slots: the
// iteration picks its slot before the call.
// RUN: ds-import --spec %ds_src/examples/models/gpt-tiny.json \
// RUN:   | ds-opt --ds-training-pipeline='config=%S/Inputs/accumulate-2.json' \
// RUN:   | ds-opt --ds-lower-nn-to-linalg --ds-lower-train-to-linalg --ds-lower-to-llvm \
// RUN:       -mlir-print-ir-after=ds-plan-buffers -o /dev/null 2>&1 \
// RUN:   | FileCheck %s

// CHECK-LABEL: IR Dump After PlanBuffers
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    dstrain.gradient_accumulation_steps = 2
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for
// CHECK-NOT:       memref.alloc
// CHECK:           arith.select
// CHECK-NOT:       memref.alloc
// CHECK:           func.call @forward_backward
// CHECK-NOT:       memref.alloc
// CHECK:           scf.yield
// CHECK-NOT:     memref.alloc
// CHECK:         return
