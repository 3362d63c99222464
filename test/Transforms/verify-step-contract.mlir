// RUN: ds-opt %s --ds-verify-step-contract --split-input-file -verify-diagnostics | FileCheck %s

// A valid step passes through unchanged.
// CHECK-LABEL: func.func @train_step(
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {param = "w", kind = "exp_avg"}},
    %v: tensor<4xf32> {dstrain.state = {param = "w", kind = "exp_avg_sq"}},
    %step: tensor<i64> {dstrain.step}, %x: tensor<2x3x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 2 : i64} {
  %lr = arith.constant dense<1.0e-3> : tensor<f32>
  %w1, %m1, %v1 = dstrain.adam %w, %w, %m, %v step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %w1, %m1, %v1, %lr, %lr, %lr : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
func.func @forward_backward(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                            %x: tensor<3x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{step contract: no func.func @train_step with a body; the training passes build it}}
module {
}

// -----

// expected-error @+4 {{step contract: argument #2: exp_avg of "w" stands for 'tensor<8xf32>' but the parameter is 'tensor<4xf32>'}}
// expected-error @+3 {{step contract: argument #3: state of unknown parameter "b"}}
// expected-error @+2 {{step contract: argument #4: state kind "velocity" is not one of exp_avg, exp_avg_sq, momentum_buffer}}
// expected-error @+1 {{step contract: parameter "w2" has state [] but "w" has [exp_avg, velocity]; every parameter has the same kinds}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %w2: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w2", init = zeros>},
    %m: tensor<8xf32> {dstrain.state = {param = "w", kind = "exp_avg"}},
    %b: tensor<4xf32> {dstrain.state = {param = "b", kind = "exp_avg"}},
    %q: tensor<4xf32> {dstrain.state = {param = "w", kind = "velocity"}},
    %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %w, %w2, %m, %b, %q, %l, %l, %l : tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{step contract: argument #1 must be the step, tensor<i64> {dstrain.step}, right after the optimizer state}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %x: tensor<1x4xf32>) -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %w, %l, %l, %l : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+3 {{step contract: the step (argument #1) has type 'tensor<i32>' but must be tensor<i64>}}
// expected-error @+2 {{step contract: batch argument #2 has type 'tensor<3x4xf32>' but must lead with dstrain.gradient_accumulation_steps = 2}}
// expected-error @+1 {{step contract: result #0 has type 'tensor<8xf32>' but must be the new value of argument #0 ('tensor<4xf32>')}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %step: tensor<i32> {dstrain.step}, %x: tensor<3x4xf32>)
    -> (tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 2 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  %z = arith.constant dense<1.0> : tensor<8xf32>
  return %z, %l, %l, %l : tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+3 {{step contract: @train_step needs the attribute dstrain.gradient_accumulation_steps = N : i64 (N >= 1)}}
// expected-error @+2 {{step contract: @train_step returns 2 values but must return 5 (2 new params, 0 new state tensors, loss, lr, grad_norm)}}
// expected-error @+1 {{step contract: parameter "w" (argument #1) repeats argument #0}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %w2: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %step: tensor<i64> {dstrain.step}) -> (tensor<4xf32>, tensor<f32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %w, %l : tensor<4xf32>, tensor<f32>
}

// -----

// expected-error @+1 {{step contract: result #2 (lr) has type 'tensor<f64>' but must be tensor<f32>}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<f64>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  %d = arith.constant dense<1.0> : tensor<f64>
  // expected-error @+1 {{step contract: 'bufferization.alloc_tensor' is not allowed in @train_step; the body uses only dsnn, dstrain, dsdist, arith, math, tensor, scf and func.call/return}}
  %s = bufferization.alloc_tensor() : tensor<f32>
  return %w, %s, %d, %l : tensor<4xf32>, tensor<f32>, tensor<f64>, tensor<f32>
}

// -----

func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %w, %l, %l, %l : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
// expected-error @+1 {{step contract: @forward_backward must return (loss : tensor<f32>, one gradient per parameter, of its type), i.e. 2 values; it returns 1}}
func.func @forward_backward(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>})
    -> tensor<f32> {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l : tensor<f32>
}

// -----

// Step-wide state (the fp16 loss scaler's) after the per-parameter state:
// valid, with each kind's type.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      kind = "loss_scale"
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {param = "w", kind = "momentum_buffer"}},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale", init = 65536.0}},
    %k: tensor<i64> {dstrain.state = {kind = "skipped_steps", init = 0}},
    %step: tensor<i64> {dstrain.step}, %x: tensor<1x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %lr = arith.constant dense<1.0e-3> : tensor<f32>
  %w1, %m1 = dstrain.sgd %w, %w, %m step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %w1, %m1, %s, %k, %lr, %lr, %lr : tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{step contract: argument #1: step-wide state "skipped_steps" has type 'tensor<f32>' but must be tensor<i64>}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %k: tensor<f32> {dstrain.state = {kind = "skipped_steps"}},
    %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %lr = arith.constant dense<1.0e-3> : tensor<f32>
  return %w, %k, %lr, %lr, %lr : tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @+1 {{step contract: argument #2: per-parameter state after the step-wide state; it comes first}}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
    %m: tensor<4xf32> {dstrain.state = {param = "w", kind = "momentum_buffer"}},
    %step: tensor<i64> {dstrain.step})
    -> (tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %lr = arith.constant dense<1.0e-3> : tensor<f32>
  return %w, %s, %m, %lr, %lr, %lr : tensor<4xf32>, tensor<f32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
