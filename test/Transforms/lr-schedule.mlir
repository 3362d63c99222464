// RUN: ds-opt %s --ds-lr-schedule='type=WarmupLR warmup-min-lr=0 warmup-max-lr=3e-4 warmup-num-steps=100 warmup-type=linear' | FileCheck %s
// RUN: ds-opt %s --ds-lr-schedule='type=WarmupCosineLR total-num-steps=1000 warmup-num-steps=10' | FileCheck %s --check-prefix=COS
// RUN: ds-opt %s --ds-lr-schedule='type=OneCycle cycle-min-lr=1e-4 cycle-max-lr=1e-3 cycle-first-step-size=50' | FileCheck %s --check-prefix=ONE
// RUN: ds-opt %s --ds-lr-schedule | FileCheck %s --check-prefix=NONE

// The constant rate that feeds the optimizer and the lr result becomes the
// schedule at last_batch_iteration = step - 1.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %[[STEP:[^:]*]]: tensor<i64> {dstrain.step}
// CHECK-NEXT:    %[[C1:.*]] = arith.constant dense<1> : tensor<i64>
// CHECK-NEXT:    %[[IT:.*]] = arith.subi %[[STEP]], %[[C1]] : tensor<i64>
// CHECK-NEXT:    %[[LR:.*]] = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 3.000000e-04, warmup_num_steps = 100, warmup_type = linear> at %[[IT]]
// CHECK-NOT:     arith.constant dense<3.000000e-04>
// CHECK:         dstrain.adam %{{.*}} step %[[STEP]] lr %[[LR]]
// CHECK:         return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LR]], %{{.*}} :

// WarmupCosineLR scales the optimizer's rate, which it takes from the
// constant it replaces.
// COS-LABEL: func.func @train_step(
// COS:         dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 1000, base_lr = 3.000000e-04, warmup_num_steps = 10>

// ONE-LABEL: func.func @train_step(
// ONE:         dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.000000e-04, cycle_max_lr = 1.000000e-03, cycle_first_step_size = 50>

// NONE-LABEL: func.func @train_step(
// NONE-NOT:     dstrain.lr_schedule
// NONE:         %[[LR:.*]] = arith.constant dense<3.000000e-04> : tensor<f32>
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {param = "w", kind = "exp_avg"}},
    %v: tensor<4xf32> {dstrain.state = {param = "w", kind = "exp_avg_sq"}},
    %step: tensor<i64> {dstrain.step}, %x: tensor<1x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %lr = arith.constant dense<3.0e-4> : tensor<f32>
  %l = arith.constant dense<1.0> : tensor<f32>
  %w1, %m1, %v1 = dstrain.adam %w, %w, %m, %v step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %w1, %m1, %v1, %l, %lr, %l : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
