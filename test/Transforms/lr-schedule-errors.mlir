// RUN: not ds-opt %s --ds-lr-schedule=type=CyclicLR --split-input-file 2>&1 | FileCheck %s --check-prefix=TYPE
// RUN: not ds-opt %s --ds-lr-schedule='type=WarmupLR warmup-type=cubic' --split-input-file 2>&1 | FileCheck %s --check-prefix=WARMUP
// RUN: not ds-opt %s --ds-lr-schedule='type=WarmupDecayLR total-num-steps=5 warmup-num-steps=10' --split-input-file 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: ds-opt %s --ds-lr-schedule=type=WarmupLR --split-input-file -verify-diagnostics -o /dev/null

// TYPE: error: ds-lr-schedule: type "CyclicLR" is not supported; use none, WarmupLR, WarmupDecayLR, WarmupCosineLR or OneCycle
// WARMUP: error: ds-lr-schedule: warmup-type "cubic" is not log or linear
// The schedule attribute's own verifier says what is out of range.
// RANGE: error: #dstrain.warmup_decay_lr: total_num_steps is 5 but must exceed the warmup

// expected-error @+1 {{ds-lr-schedule: @train_step has no step argument {dstrain.step}; run ds-optimizer first}}
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>})
    -> (tensor<f32>, tensor<4xf32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w, %l : tensor<f32>, tensor<4xf32>, tensor<f32>
}

// -----

// A schedule is already in place: the rate is no longer a constant.
// expected-error @+1 {{ds-lr-schedule: @train_step's learning rate is not the optimizer's constant; is a schedule already applied?}}
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                      %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3> at %step
  return %w, %l, %lr, %l : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// Valid for WarmupLR; the RANGE run's schedule is rejected here.
func.func @train_step(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                      %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  %lr = arith.constant dense<1.0e-3> : tensor<f32>
  return %w, %l, %lr, %l : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
