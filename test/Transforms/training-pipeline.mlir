// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/train-adamw.json' | FileCheck %s
// RUN: ds-import --spec %ds_src/examples/models/gpt-tiny.json | ds-opt --ds-training-pipeline='config=%S/Inputs/train-adamw.json' | FileCheck %s --check-prefix=IMPORT
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/train-fp16.json' | FileCheck %s --check-prefix=FP16
// RUN: not ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/train-fp16-bf16.json' 2>&1 | FileCheck %s --check-prefix=BOTH
// RUN: not ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/missing.json' 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline 2>&1 | FileCheck %s --check-prefix=NOCONFIG

// The whole training phase on the 2-layer GPT of examples/ (as text and as
// ds-import builds it from its spec): the model contract in, a @train_step
// that ds-verify-step-contract (the pipeline's last pass) accepts out. Config: AdamW, 4 micro-batches, clipping at 1.0,
// linear warmup.

// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      -> (tensor<f32>, tensor<64x16xf32>, tensor<8x16xf32>,
// CHECK:         dsnn.layer "h.0"("GPT2Block")
// CHECK:         dsnn.layer "h.1"("GPT2Block")
// CHECK:         dsnn.cross_entropy_grad
// CHECK:         dsnn.layer "h.1.backward"("GPT2Block") {{.*}} attributes {backward}
// CHECK:           dsnn.attention_grad
// CHECK:         dsnn.layer "h.0.backward"("GPT2Block") {{.*}} attributes {backward}
// The tied wte.weight: LM-head and embedding gradients summed.
// CHECK:         %[[EMB:.*]] = dsnn.embedding_grad %arg28, %{{.*}} -> tensor<64x16xf32>
// CHECK-NEXT:    %[[WTE:.*]] = dsnn.add %{{.*}}, %[[EMB]] : tensor<64x16xf32>, tensor<64x16xf32>
// CHECK-NEXT:    return %{{.*}}, %[[WTE]],

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      {dsnn.param = #dsnn.param<name = "wte.weight"
// CHECK-SAME:      {dstrain.state = {kind = "exp_avg", param = "wte.weight"}}
// CHECK-SAME:      {dstrain.state = {kind = "exp_avg_sq", param = "ln_f.bias"}}
// CHECK-SAME:      %[[STEP:[^:]*]]: tensor<i64> {dstrain.step}
// CHECK-SAME:      tensor<4x2x8xi64>, %{{.*}}: tensor<4x8xi64>, %{{.*}}: tensor<4x2x8xi64>)
// CHECK-SAME:      attributes {dstrain.gradient_accumulation_steps = 4 : i64}
// CHECK:         %[[LR:.*]] = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 3.000000e-04, warmup_num_steps = 10, warmup_type = linear>
// CHECK:         scf.for
// CHECK:           func.call @forward_backward
// CHECK:         dstrain.clip_grad_norm {{.*}} max_norm 1.000000e+00
// CHECK-COUNT-28: dstrain.adam {{.*}} step %[[STEP]] lr %[[LR]] {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64}
// CHECK-NOT:     dstrain.adam
// CHECK:         return

// IMPORT-LABEL: func.func @forward_backward(
// IMPORT:         dsnn.layer "h.1.backward"("GPT2Block")
// IMPORT:         dsnn.layer "h.0.backward"("GPT2Block")
// IMPORT-LABEL: func.func @train_step(
// IMPORT-SAME:      attributes {dstrain.gradient_accumulation_steps = 4 : i64}
// IMPORT-COUNT-28: dstrain.adam
// IMPORT-NOT:     dstrain.adam

// fp16: a 16-bit forward/backward over f32 parameters, the backward seeded
// with the loss scale, and the scaler's state and skip in the step.
// FP16-LABEL: func.func @forward(
// FP16-SAME:      %[[SCALE:[^:]*]]: tensor<f32> {dstrain.state = {kind = "loss_scale"}}
// FP16:         dsnn.cast %{{.*}} : tensor<64x16xf32> -> tensor<64x16xf16>
// FP16:         dsnn.linear {{.*}} -> tensor<2x8x64xf16>
// FP16:         %[[LOGITS:.*]] = dsnn.cast %{{.*}} : tensor<2x8x64xf16> -> tensor<2x8x64xf32>
// FP16:         %[[LOSS:.*]] = dsnn.cross_entropy %[[LOGITS]]
// FP16:         dsnn.grad_scale %[[LOSS]] by %[[SCALE]]
// FP16-LABEL: func.func @train_step(
// FP16-SAME:      {dstrain.state = {kind = "exp_avg_sq", param = "ln_f.bias"}}
// FP16-SAME:      %[[S:[^:]*]]: tensor<f32> {dstrain.state = {init = 6.553600e+04 : f64, kind = "loss_scale"}}
// FP16-SAME:      %[[G:[^:]*]]: tensor<i64> {dstrain.state = {init = 0 : i64, kind = "loss_scale_good_steps"}}
// FP16-SAME:      %[[H:[^:]*]]: tensor<i64> {dstrain.state = {init = 2 : i64, kind = "loss_scale_hysteresis"}}
// FP16-SAME:      %[[SK:[^:]*]]: tensor<i64> {dstrain.state = {init = 0 : i64, kind = "skipped_steps"}}
// FP16-SAME:      %[[STEP:[^:]*]]: tensor<i64> {dstrain.step}
// FP16:         %[[APPLIED:.*]] = arith.subi %[[STEP]], %[[SK]] : tensor<i64>
// FP16:         call @forward_backward({{.*}}, %[[S]],
// FP16:         %[[OVF:.*]] = dstrain.has_overflow
// The config leaves gradient_clipping out: DeepSpeed's default clips at 1.0.
// FP16:         dstrain.clip_grad_norm {{.*}} max_norm 1.000000e+00
// FP16-COUNT-28: dstrain.adam {{.*}} step %[[APPLIED]] lr %{{.*}} skip %[[OVF]]
// FP16:         dstrain.loss_scale_update scale %[[S]] good_steps %[[G]] hysteresis_left %[[H]] overflow %[[OVF]]{{$}}
// BOTH: error: fp16.enabled and bf16.enabled are both true; enable at most one
// MISSING: error: cannot read config file "{{.*}}missing.json"
// NOCONFIG: ds-training-pipeline needs config=FILE
