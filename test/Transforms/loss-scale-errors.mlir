// RUN: ds-opt %s --ds-loss-scale --split-input-file -verify-diagnostics -o /dev/null
// RUN: not ds-opt %s --split-input-file --ds-loss-scale=hysteresis=0 2>&1 | FileCheck %s --check-prefix=HYST
// RUN: not ds-opt %s --split-input-file --ds-loss-scale=scale-window=0 2>&1 | FileCheck %s --check-prefix=WINDOW
// RUN: not ds-opt %s --split-input-file --ds-loss-scale=initial-scale-power=200 2>&1 | FileCheck %s --check-prefix=POWER
// RUN: not ds-opt %s --split-input-file --ds-loss-scale=min-scale=0 2>&1 | FileCheck %s --check-prefix=MIN
// HYST: error: ds-loss-scale: hysteresis (fp16.hysteresis) is 0 but must be >= 1
// WINDOW: error: ds-loss-scale: scale-window (fp16.loss_scale_window) is 0 but must be >= 1
// POWER: error: ds-loss-scale: initial-scale-power (fp16.initial_scale_power) is 200 but 2^power must be an f32 in [1, 2^127]
// MIN: error: ds-loss-scale: min-scale (fp16.min_loss_scale) is 0 but must be > 0

// The backward was not seeded with a scale: nothing to unscale.
// expected-error @+1 {{ds-loss-scale: @train_step takes no loss scale; run ds-mixed-precision{loss-scale=1} on the model contract first}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %step: tensor<i64> {dstrain.step}) -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  %n = dstrain.global_norm %w : tensor<4xf32>
  return %w, %l, %l, %n : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{ds-loss-scale: @train_step must return the gradient norm of dstrain.clip_grad_norm or dstrain.global_norm (ds-clip-grads) last}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
    %step: tensor<i64> {dstrain.step}) -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %w, %l, %l, %l : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
