// RUN: ds-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Valid schedules: 1F1B as DeepSpeed's TrainSchedule emits it (buffers
// mb % max(2, min(stages - stage, micro_batches))) and GPipe (all forwards,
// then all backwards in reverse), for 2 to 4 stages. Each round-trips.

// CHECK-LABEL: dsdist.pipeline_schedule "1f1b" stages 2 micro_batches 4 {
// CHECK-COUNT-2: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "1f1b" stages 2 micro_batches 4 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), send_activation(mb = 1, buf = 1), backward(mb = 0, buf = 0), load_micro_batch(mb = 2, buf = 0), forward(mb = 2, buf = 0), recv_grad(mb = 1, buf = 1), send_activation(mb = 2, buf = 0), backward(mb = 1, buf = 1), load_micro_batch(mb = 3, buf = 1), forward(mb = 3, buf = 1), recv_grad(mb = 2, buf = 0), send_activation(mb = 3, buf = 1), backward(mb = 2, buf = 0), recv_grad(mb = 3, buf = 1), backward(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_activation(mb = 2, buf = 0), load_micro_batch(mb = 2, buf = 0), forward(mb = 2, buf = 0), backward(mb = 2, buf = 0), send_grad(mb = 2, buf = 0), recv_activation(mb = 3, buf = 1), load_micro_batch(mb = 3, buf = 1), forward(mb = 3, buf = 1), backward(mb = 3, buf = 1), send_grad(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "1f1b" stages 3 micro_batches 4 {
// CHECK-COUNT-3: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "1f1b" stages 3 micro_batches 4 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), recv_grad(mb = 0, buf = 0), send_activation(mb = 2, buf = 2), backward(mb = 0, buf = 0), load_micro_batch(mb = 3, buf = 0), forward(mb = 3, buf = 0), recv_grad(mb = 1, buf = 1), send_activation(mb = 3, buf = 0), backward(mb = 1, buf = 1), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), recv_grad(mb = 3, buf = 0), backward(mb = 3, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), send_activation(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 2, buf = 0), forward(mb = 2, buf = 0), recv_grad(mb = 1, buf = 1), send_activation(mb = 2, buf = 0), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_activation(mb = 3, buf = 1), forward(mb = 3, buf = 1), recv_grad(mb = 2, buf = 0), send_activation(mb = 3, buf = 1), backward(mb = 2, buf = 0), send_grad(mb = 2, buf = 0), recv_grad(mb = 3, buf = 1), backward(mb = 3, buf = 1), send_grad(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 2: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_activation(mb = 2, buf = 0), load_micro_batch(mb = 2, buf = 0), forward(mb = 2, buf = 0), backward(mb = 2, buf = 0), send_grad(mb = 2, buf = 0), recv_activation(mb = 3, buf = 1), load_micro_batch(mb = 3, buf = 1), forward(mb = 3, buf = 1), backward(mb = 3, buf = 1), send_grad(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "1f1b" stages 4 micro_batches 4 {
// CHECK-COUNT-4: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "1f1b" stages 4 micro_batches 4 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), load_micro_batch(mb = 3, buf = 3), forward(mb = 3, buf = 3), recv_grad(mb = 0, buf = 0), send_activation(mb = 3, buf = 3), backward(mb = 0, buf = 0), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), forward(mb = 2, buf = 2), recv_grad(mb = 0, buf = 0), send_activation(mb = 2, buf = 2), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 3, buf = 0), forward(mb = 3, buf = 0), recv_grad(mb = 1, buf = 1), send_activation(mb = 3, buf = 0), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), recv_grad(mb = 3, buf = 0), backward(mb = 3, buf = 0), send_grad(mb = 3, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 2: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), send_activation(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 2, buf = 0), forward(mb = 2, buf = 0), recv_grad(mb = 1, buf = 1), send_activation(mb = 2, buf = 0), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_activation(mb = 3, buf = 1), forward(mb = 3, buf = 1), recv_grad(mb = 2, buf = 0), send_activation(mb = 3, buf = 1), backward(mb = 2, buf = 0), send_grad(mb = 2, buf = 0), recv_grad(mb = 3, buf = 1), backward(mb = 3, buf = 1), send_grad(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 3: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_activation(mb = 2, buf = 0), load_micro_batch(mb = 2, buf = 0), forward(mb = 2, buf = 0), backward(mb = 2, buf = 0), send_grad(mb = 2, buf = 0), recv_activation(mb = 3, buf = 1), load_micro_batch(mb = 3, buf = 1), forward(mb = 3, buf = 1), backward(mb = 3, buf = 1), send_grad(mb = 3, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "1f1b" stages 4 micro_batches 2 {
// CHECK-COUNT-4: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "1f1b" stages 4 micro_batches 2 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 2: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), send_activation(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
  stage 3: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
// CHECK-COUNT-2: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "gpipe" stages 3 micro_batches 4 {
// CHECK-COUNT-3: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "gpipe" stages 3 micro_batches 4 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), load_micro_batch(mb = 3, buf = 3), forward(mb = 3, buf = 3), send_activation(mb = 3, buf = 3), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), recv_activation(mb = 3, buf = 3), forward(mb = 3, buf = 3), send_activation(mb = 3, buf = 3), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), send_grad(mb = 3, buf = 3), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 2: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), recv_activation(mb = 3, buf = 3), load_micro_batch(mb = 3, buf = 3), forward(mb = 3, buf = 3), backward(mb = 3, buf = 3), send_grad(mb = 3, buf = 3), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// CHECK-LABEL: dsdist.pipeline_schedule "gpipe" stages 4 micro_batches 4 {
// CHECK-COUNT-4: stage {{[0-9]+}}:
// CHECK-NEXT: }
dsdist.pipeline_schedule "gpipe" stages 4 micro_batches 4 {
  stage 0: load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), load_micro_batch(mb = 3, buf = 3), forward(mb = 3, buf = 3), send_activation(mb = 3, buf = 3), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), recv_activation(mb = 3, buf = 3), forward(mb = 3, buf = 3), send_activation(mb = 3, buf = 3), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), send_grad(mb = 3, buf = 3), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 2: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), forward(mb = 2, buf = 2), send_activation(mb = 2, buf = 2), recv_activation(mb = 3, buf = 3), forward(mb = 3, buf = 3), send_activation(mb = 3, buf = 3), recv_grad(mb = 3, buf = 3), backward(mb = 3, buf = 3), send_grad(mb = 3, buf = 3), recv_grad(mb = 2, buf = 2), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 3: recv_activation(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0), forward(mb = 0, buf = 0), recv_activation(mb = 1, buf = 1), load_micro_batch(mb = 1, buf = 1), forward(mb = 1, buf = 1), recv_activation(mb = 2, buf = 2), load_micro_batch(mb = 2, buf = 2), forward(mb = 2, buf = 2), recv_activation(mb = 3, buf = 3), load_micro_batch(mb = 3, buf = 3), forward(mb = 3, buf = 3), backward(mb = 3, buf = 3), send_grad(mb = 3, buf = 3), backward(mb = 2, buf = 2), send_grad(mb = 2, buf = 2), backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// Interleaved (Megatron's interleaved 1F1B), 2 stages x 2 chunks: stage
// 1's chunk 0 sends around the ring to stage 0's chunk 1; each instruction
// names its chunk.

// CHECK-LABEL: dsdist.pipeline_schedule "interleaved" stages 2 micro_batches 2 virtual_stages 2 {
// CHECK-NEXT: stage 0: load_micro_batch(mb = 0, buf = 0, chunk = 0), forward(mb = 0, buf = 0, chunk = 0)
// CHECK-NEXT: stage 1:
// CHECK-NEXT: }
dsdist.pipeline_schedule "interleaved" stages 2 micro_batches 2 virtual_stages 2 {
  stage 0: load_micro_batch(mb = 0, buf = 0, chunk = 0), forward(mb = 0, buf = 0, chunk = 0), send_activation(mb = 0, buf = 0, chunk = 0), load_micro_batch(mb = 1, buf = 1, chunk = 0), forward(mb = 1, buf = 1, chunk = 0), send_activation(mb = 1, buf = 1, chunk = 0), recv_activation(mb = 0, buf = 2, chunk = 1), forward(mb = 0, buf = 2, chunk = 1), send_activation(mb = 0, buf = 2, chunk = 1), recv_activation(mb = 1, buf = 3, chunk = 1), forward(mb = 1, buf = 3, chunk = 1), send_activation(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 2, chunk = 1), backward(mb = 0, buf = 2, chunk = 1), send_grad(mb = 0, buf = 2, chunk = 1), recv_grad(mb = 1, buf = 3, chunk = 1), backward(mb = 1, buf = 3, chunk = 1), send_grad(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 0, chunk = 0), backward(mb = 0, buf = 0, chunk = 0), recv_grad(mb = 1, buf = 1, chunk = 0), backward(mb = 1, buf = 1, chunk = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0, chunk = 0), forward(mb = 0, buf = 0, chunk = 0), recv_activation(mb = 1, buf = 1, chunk = 0), send_activation(mb = 0, buf = 0, chunk = 0), forward(mb = 1, buf = 1, chunk = 0), recv_activation(mb = 0, buf = 2, chunk = 1), send_activation(mb = 1, buf = 1, chunk = 0), load_micro_batch(mb = 0, buf = 2, chunk = 1), forward(mb = 0, buf = 2, chunk = 1), recv_activation(mb = 1, buf = 3, chunk = 1), load_micro_batch(mb = 1, buf = 3, chunk = 1), forward(mb = 1, buf = 3, chunk = 1), backward(mb = 0, buf = 2, chunk = 1), send_grad(mb = 0, buf = 2, chunk = 1), backward(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 0, chunk = 0), send_grad(mb = 1, buf = 3, chunk = 1), backward(mb = 0, buf = 0, chunk = 0), recv_grad(mb = 1, buf = 1, chunk = 0), send_grad(mb = 0, buf = 0, chunk = 0), backward(mb = 1, buf = 1, chunk = 0), send_grad(mb = 1, buf = 1, chunk = 0), reduce_tied_grads, reduce_grads, optimizer_step
}

// -----

// Invalid schedules: one verifier message each.

// expected-error @+1 {{kind "zb" is unknown; expected "1f1b", "gpipe" or "interleaved"}}
dsdist.pipeline_schedule "zb" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stages (1) and micro_batches (0) must be >= 1}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 0 {
  stage 0: optimizer_step
}

// -----

// expected-error @+1 {{has 1 instruction streams but stages is 2; give one stream per stage}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0 never forwards micro-batch 1; each is forwarded and backwarded once per stage}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0 never backwards micro-batch 0}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0: the stream must end with optimizer_step}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_grads
}

// -----

// expected-error @+1 {{stage 0, instruction 3 (forward(mb = 1, buf = 1)): comes after optimizer_step, which must be last}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step,
           forward(mb = 1, buf = 1), backward(mb = 1, buf = 1)
}

// -----

// expected-error @+1 {{stage 0, instruction 2 (reduce_grads): reduces gradients before micro-batch 1 is backwarded}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), reduce_grads,
           forward(mb = 1, buf = 1), backward(mb = 1, buf = 1), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (reduce_tied_grads): reduces gradients before micro-batch 0 is backwarded}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: reduce_tied_grads, forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (forward(mb = 4, buf = 0)): micro-batch 4 is out of range; micro_batches is 4}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 4 {
  stage 0: forward(mb = 4, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (load_micro_batch(mb = 0, buf = 0)): micro-batch 0 is loaded twice}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: load_micro_batch(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0),
           forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (load_micro_batch(mb = 0, buf = 0)): micro-batch 0 is loaded after its forward}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), load_micro_batch(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (forward(mb = 0, buf = 0)): micro-batch 0 is forwarded twice}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 2 (backward(mb = 0, buf = 0)): micro-batch 0 is backwarded twice}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (backward(mb = 0, buf = 0)): micro-batch 0 is backwarded before its forward}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: backward(mb = 0, buf = 0), forward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (recv_activation(mb = 0, buf = 0)): the first stage has no previous stage to receive activations from}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: recv_activation(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 1, instruction 1 (recv_activation(mb = 0, buf = 0)): micro-batch 0 receives activations twice}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), recv_activation(mb = 0, buf = 0),
           forward(mb = 0, buf = 0), backward(mb = 0, buf = 0),
           send_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 1, instruction 0 (forward(mb = 0, buf = 0)): micro-batch 0 is forwarded before recv_activation delivers its input}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: forward(mb = 0, buf = 0), recv_activation(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (send_activation(mb = 0, buf = 0)): the last stage has no next stage to send activations to}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: send_activation(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (send_activation(mb = 0, buf = 0)): micro-batch 0 sends activations before its forward}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: send_activation(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 2 (send_activation(mb = 0, buf = 0)): micro-batch 0 sends activations twice}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           send_activation(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (recv_grad(mb = 0, buf = 0)): the last stage has no next stage to receive gradients from}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: recv_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (recv_grad(mb = 0, buf = 0)): micro-batch 0 receives gradients before sending its activations}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), recv_grad(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 3 (recv_grad(mb = 0, buf = 0)): micro-batch 0 receives gradients twice}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           recv_grad(mb = 0, buf = 0), recv_grad(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 2 (backward(mb = 0, buf = 0)): micro-batch 0 is backwarded before recv_grad delivers its output gradient}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 0 (send_grad(mb = 0, buf = 0)): the first stage has no previous stage to send gradients to}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: send_grad(mb = 0, buf = 0), optimizer_step
  stage 1: optimizer_step
}

// -----

// expected-error @+1 {{stage 1, instruction 2 (send_grad(mb = 0, buf = 0)): micro-batch 0 sends gradients before its backward}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           send_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 1, instruction 4 (send_grad(mb = 0, buf = 0)): micro-batch 0 sends gradients twice}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0),
           send_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// The last stage of a 1F1B pipeline holds one micro-batch at a time.
// expected-error @+1 {{stage 1, instruction 3 (forward(mb = 1, buf = 1)): 2 micro-batches are in flight (forwarded, not yet backwarded) but 1f1b stage 1 of 2 holds at most 1}}
dsdist.pipeline_schedule "1f1b" stages 2 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0),
           recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0),
           backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (backward(mb = 0, buf = 1)): micro-batch 0 used buffer 0 before; a micro-batch keeps one buffer}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 1), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (forward(mb = 1, buf = 0)): buffer 0 still holds micro-batch 0, which is not backwarded yet}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), forward(mb = 1, buf = 0),
           backward(mb = 1, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 1 (send_activation(mb = 0, buf = 0)) pairs with stage 1, instruction 0 (recv_activation(mb = 1, buf = 1)): sends and receives between neighbours must name the same kind, micro-batches and chunks in the same order}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1),
           recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1),
           recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+1 {{stage 0, instruction 4 (recv_grad(mb = 1, buf = 1)) pairs with stage 1, instruction 5 (send_grad(mb = 0, buf = 0)): sends and receives between neighbours must name the same kind, micro-batches and chunks in the same order}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1),
           recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0),
           backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), optimizer_step
}

// -----

// Both neighbours send at once: each stream is fine alone and the orders
// agree, but blocking sends wait for each other.
// expected-error @+1 {{stage 0, instruction 3 (send_activation(mb = 1, buf = 1)) waits for recv_activation on stage 1, which is blocked at stage 1, instruction 3 (send_grad(mb = 0, buf = 0)): with blocking sends the streams deadlock; reorder them so each send meets its receive}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           forward(mb = 1, buf = 1), send_activation(mb = 1, buf = 1),
           recv_grad(mb = 0, buf = 0), backward(mb = 0, buf = 0),
           recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0),
           recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1),
           backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), optimizer_step
}

// -----

// Both receive at once.
// expected-error @+1 {{stage 0, instruction 3 (recv_grad(mb = 0, buf = 0)) waits for send_grad on stage 1, which is blocked at stage 1, instruction 2 (recv_activation(mb = 1, buf = 1)): with blocking sends the streams deadlock}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 2 {
  stage 0: forward(mb = 0, buf = 0), send_activation(mb = 0, buf = 0),
           forward(mb = 1, buf = 1), recv_grad(mb = 0, buf = 0),
           send_activation(mb = 1, buf = 1), backward(mb = 0, buf = 0),
           recv_grad(mb = 1, buf = 1), backward(mb = 1, buf = 1), optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0), forward(mb = 0, buf = 0),
           recv_activation(mb = 1, buf = 1), forward(mb = 1, buf = 1),
           backward(mb = 0, buf = 0), send_grad(mb = 0, buf = 0),
           backward(mb = 1, buf = 1), send_grad(mb = 1, buf = 1), optimizer_step
}

// -----

// expected-error @+2 {{optimizer_step takes no micro-batch, buffer or chunk}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: optimizer_step(mb = 0, buf = 0)
}

// -----

// expected-error @+2 {{forward needs a micro-batch and a buffer: forward(mb = N, buf = N)}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward, optimizer_step
}

// -----

// expected-error @+2 {{forward: micro-batch -1 and buffer 0 must be >= 0}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: forward(mb = -1, buf = 0), optimizer_step
}

// -----

// expected-error @+2 {{unknown pipeline instruction 'fwd'; expected one of load_micro_batch, forward, backward, send_activation, recv_activation, send_grad, recv_grad, reduce_tied_grads, reduce_grads, optimizer_step}}
dsdist.pipeline_schedule "gpipe" stages 1 micro_batches 1 {
  stage 0: fwd(mb = 0, buf = 0), optimizer_step
}

// -----

// expected-error @+3 {{expected stage 1, got stage 2}}
dsdist.pipeline_schedule "gpipe" stages 2 micro_batches 1 {
  stage 0: optimizer_step
  stage 2: optimizer_step
}

// -----

// expected-error @+1 {{virtual_stages 2 with kind "1f1b": only the interleaved schedule holds several model chunks per stage, and it holds at least 2}}
dsdist.pipeline_schedule "1f1b" stages 1 micro_batches 1 virtual_stages 2 {
  stage 0: forward(mb = 0, buf = 0), backward(mb = 0, buf = 0), optimizer_step
}

// -----

// Stage 1 sends chunk 1's input gradient of micro-batch 1 before that of
// micro-batch 0, which stage 0 receives first (one tag: MPI would hand it
// the wrong tensor).
// expected-error @+1 {{stage 0, instruction 12 (recv_grad(mb = 0, buf = 2, chunk = 1)) pairs with stage 1, instruction 14 (send_grad(mb = 1, buf = 3, chunk = 1)): sends and receives between neighbours must name the same kind, micro-batches and chunks in the same order}}
dsdist.pipeline_schedule "interleaved" stages 2 micro_batches 2 virtual_stages 2 {
  stage 0: load_micro_batch(mb = 0, buf = 0, chunk = 0), forward(mb = 0, buf = 0, chunk = 0), send_activation(mb = 0, buf = 0, chunk = 0), load_micro_batch(mb = 1, buf = 1, chunk = 0), forward(mb = 1, buf = 1, chunk = 0), send_activation(mb = 1, buf = 1, chunk = 0), recv_activation(mb = 0, buf = 2, chunk = 1), forward(mb = 0, buf = 2, chunk = 1), send_activation(mb = 0, buf = 2, chunk = 1), recv_activation(mb = 1, buf = 3, chunk = 1), forward(mb = 1, buf = 3, chunk = 1), send_activation(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 2, chunk = 1), backward(mb = 0, buf = 2, chunk = 1), send_grad(mb = 0, buf = 2, chunk = 1), recv_grad(mb = 1, buf = 3, chunk = 1), backward(mb = 1, buf = 3, chunk = 1), send_grad(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 0, chunk = 0), backward(mb = 0, buf = 0, chunk = 0), recv_grad(mb = 1, buf = 1, chunk = 0), backward(mb = 1, buf = 1, chunk = 0), reduce_tied_grads, reduce_grads, optimizer_step
  stage 1: recv_activation(mb = 0, buf = 0, chunk = 0), forward(mb = 0, buf = 0, chunk = 0), recv_activation(mb = 1, buf = 1, chunk = 0), send_activation(mb = 0, buf = 0, chunk = 0), forward(mb = 1, buf = 1, chunk = 0), recv_activation(mb = 0, buf = 2, chunk = 1), send_activation(mb = 1, buf = 1, chunk = 0), load_micro_batch(mb = 0, buf = 2, chunk = 1), forward(mb = 0, buf = 2, chunk = 1), recv_activation(mb = 1, buf = 3, chunk = 1), load_micro_batch(mb = 1, buf = 3, chunk = 1), forward(mb = 1, buf = 3, chunk = 1), backward(mb = 0, buf = 2, chunk = 1), backward(mb = 1, buf = 3, chunk = 1), send_grad(mb = 1, buf = 3, chunk = 1), recv_grad(mb = 0, buf = 0, chunk = 0), send_grad(mb = 0, buf = 2, chunk = 1), backward(mb = 0, buf = 0, chunk = 0), recv_grad(mb = 1, buf = 1, chunk = 0), send_grad(mb = 0, buf = 0, chunk = 0), backward(mb = 1, buf = 1, chunk = 0), send_grad(mb = 1, buf = 1, chunk = 0), reduce_tied_grads, reduce_grads, optimizer_step
}
