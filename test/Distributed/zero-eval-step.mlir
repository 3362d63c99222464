// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/bf16-zero3.json world-size=2 eval=1' | FileCheck %s --check-prefix=Z3
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/bf16-zero2.json world-size=2 eval=1' | FileCheck %s --check-prefix=Z2
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/pipe-2.json world-size=2 stage=1 eval=1' 2>/dev/null | FileCheck %s --check-prefix=PIPE

// ds-zero gives @eval_step (ds-eval-step) the parameters as the step holds
// them. ZeRO-3, bf16: it takes the f32 chunks and gathers each as the
// gradient function's forward does (bf16 chunks, released after the last
// use); nothing of the backward's.
// Z3-LABEL: func.func @eval_step(
// Z3-SAME:      %[[WTE:[^:]*]]: tensor<512xf32> {dsdist.sharding
// Z3:           %[[C:.*]] = dsnn.cast %[[WTE]] : tensor<512xf32> -> tensor<512xbf16>
// Z3-NEXT:      %[[G:.*]] = dsdist.all_gather %[[C]] over ["dp"] dim 0 {phase = "forward"} : tensor<512xbf16> -> tensor<1024xbf16>
// Z3-NEXT:      %[[W:.*]] = tensor.expand_shape %[[G]] {{.*}} : tensor<1024xbf16> into tensor<64x16xbf16>
// Z3:           dsnn.embedding %{{.*}}, %[[W]] :
// Z3:           dsnn.linear {{.*}}, %[[W]] :
// Z3-NEXT:      dsdist.release %[[W]] :
// Z3-NOT:       phase = "backward"
// Z3:           return {{.*}} : tensor<f32>
// Z3-NEXT:    }

// ZeRO-2, bf16: every rank holds the parameters whole in bf16, and so
// does @eval_step: its casts of them are gone.
// Z2-LABEL: func.func @eval_step(
// Z2-SAME:      %[[WTE:[^:]*]]: tensor<64x16xbf16> {dsnn.param
// Z2-NOT:       dsnn.cast %[[WTE]]
// Z2-NOT:       dsdist.
// Z2:           dsnn.embedding %{{.*}}, %[[WTE]] :
// Z2:           return {{.*}} : tensor<f32>

// The last pipeline stage's @eval_step receives the stage before's
// activations in place of its pipe input and returns the loss
// (test/Train/eval-pipeline.test runs both stages).
// PIPE-LABEL:   func.func @eval_step(
// PIPE-NOT:     dsdist.pipe_input
// PIPE-SAME:    -> tensor<f32>
// PIPE-NEXT:    dsdist.recv from "pp" offset -1 : tensor<2x8x16xf32>
// PIPE-NOT:     dsdist.send
// PIPE:         return %{{.*}} : tensor<f32>
