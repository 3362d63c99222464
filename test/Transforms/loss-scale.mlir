// RUN: ds-opt %s --ds-loss-scale='initial-scale-power=12 scale-window=50 hysteresis=3 min-scale=0.5' --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-loss-scale='static-scale=128' --split-input-file | FileCheck %s --check-prefix=STATIC

// The scaler's state follows the scale with its initial values; gradients
// are unscaled before both the norm and the update (no clipping here, so
// the update reads them directly); the overflow flag skips the update;
// the optimizer and the schedule count applied steps; the new state is
// returned in the same places as its arguments.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      {dstrain.state = {kind = "exp_avg_sq", param = "w"}}
// CHECK-SAME:      %[[S:[^:]*]]: tensor<f32> {dstrain.state = {init = 4.096000e+03 : f64, kind = "loss_scale"}}
// CHECK-SAME:      %[[G:[^:]*]]: tensor<i64> {dstrain.state = {init = 0 : i64, kind = "loss_scale_good_steps"}}
// CHECK-SAME:      %[[H:[^:]*]]: tensor<i64> {dstrain.state = {init = 3 : i64, kind = "loss_scale_hysteresis"}}
// CHECK-SAME:      %[[SK:[^:]*]]: tensor<i64> {dstrain.state = {init = 0 : i64, kind = "skipped_steps"}}
// CHECK-SAME:      %[[STEP:[^:]*]]: tensor<i64> {dstrain.step}
// CHECK-SAME:      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<f32>, tensor<f32>, tensor<f32>)
// CHECK:         %[[APPLIED:.*]] = arith.subi %[[STEP]], %[[SK]] : tensor<i64>
// CHECK:         %[[IT:.*]] = arith.subi %[[APPLIED]], %{{.*}} : tensor<i64>
// CHECK:         %[[LR:.*]] = dstrain.lr_schedule {{.*}} at %[[IT]]
// CHECK:         %[[GRAD:.*]] = dsnn.mul %arg0, %[[S]]
// CHECK:         %[[INV:.*]] = dsnn.div %{{.*}}, %[[S]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    %[[U:.*]] = dsnn.mul %[[GRAD]], %[[INV]] : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
// CHECK-NEXT:    %[[OVF:.*]] = dstrain.has_overflow %[[U]] : tensor<4xf32>
// CHECK-NEXT:    %[[NORM:.*]] = dstrain.global_norm %[[U]] : tensor<4xf32>
// CHECK-NEXT:    %[[P:.*]], %[[M:.*]], %[[V:.*]] = dstrain.adam %arg0, %[[U]], %arg1, %arg2 step %[[APPLIED]] lr %[[LR]] skip %[[OVF]]
// CHECK-NEXT:    %[[NS:.*]], %[[NG:.*]], %[[NH:.*]], %{{.*}} = dstrain.loss_scale_update scale %[[S]] good_steps %[[G]] hysteresis_left %[[H]] overflow %[[OVF]] {hysteresis = 3 : i64, min_scale = 5.000000e-01 : f64, scale_window = 50 : i64}
// CHECK-NEXT:    %[[ONE:.*]] = arith.extui %[[OVF]] : tensor<i1> to tensor<i64>
// CHECK-NEXT:    %[[NSK:.*]] = arith.addi %[[SK]], %[[ONE]] : tensor<i64>
// CHECK-NEXT:    return %[[P]], %[[M]], %[[V]], %[[NS]], %[[NG]], %[[NH]], %[[NSK]], %{{.*}}, %[[LR]], %[[NORM]]

// A static scale starts at its value and stays (only the skip remains).
// STATIC:        {dstrain.state = {init = 1.280000e+02 : f64, kind = "loss_scale"}}
// STATIC:        dstrain.loss_scale_update {{.*}} {static_scale = 1.280000e+02 : f64}
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {kind = "exp_avg", param = "w"}},
    %v: tensor<4xf32> {dstrain.state = {kind = "exp_avg_sq", param = "w"}},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
    %step: tensor<i64> {dstrain.step},
    %x: tensor<1x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %one = arith.constant dense<1> : tensor<i64>
  %it = arith.subi %step, %one : tensor<i64>
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-02, warmup_num_steps = 10, warmup_type = linear> at %it
  %l = arith.constant dense<1.0> : tensor<f32>
  %g = dsnn.mul %w, %s : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %n = dstrain.global_norm %g : tensor<4xf32>
  %p1, %m1, %v1 = dstrain.adam %w, %g, %m, %v step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p1, %m1, %v1, %l, %lr, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A tensor-parallel rank's gradients are pieces of the model's: it skips
// when any rank of its tp group overflowed, so the group skips together.
// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[OVF:.*]] = dstrain.has_overflow %{{.*}} : tensor<4xf32>
// CHECK-NEXT:    %[[F:.*]] = arith.uitofp %[[OVF]] : tensor<i1> to tensor<f32>
// CHECK-NEXT:    %[[ANY:.*]] = dsdist.all_reduce max %[[F]] over ["tp"] : tensor<f32>
// CHECK:         %[[SKIP:.*]] = arith.cmpf ogt, %[[ANY]], %{{.*}} : tensor<f32>
// CHECK:         dstrain.adam {{.*}} skip %[[SKIP]]
module attributes {dsdist.grid = #dsdist.grid<dp = 1, tp = 2>} {
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {kind = "exp_avg", param = "w"}},
    %v: tensor<4xf32> {dstrain.state = {kind = "exp_avg_sq", param = "w"}},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
    %step: tensor<i64> {dstrain.step},
    %x: tensor<1x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %one = arith.constant dense<1> : tensor<i64>
  %it = arith.subi %step, %one : tensor<i64>
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-02, warmup_num_steps = 10, warmup_type = linear> at %it
  %l = arith.constant dense<1.0> : tensor<f32>
  %g = dsnn.mul %w, %s : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %n = dstrain.global_norm %g : tensor<4xf32>
  %p1, %m1, %v1 = dstrain.adam %w, %g, %m, %v step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p1, %m1, %v1, %l, %lr, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
}

// -----

// A sequence-parallel rank's gradients are already summed over sp (by
// copy_to_group's VJP), the same on every rank of its group: its own flag
// is the group's, with no reduction.
// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[OVF:.*]] = dstrain.has_overflow %{{.*}} : tensor<4xf32>
// CHECK-NOT:     dsdist.all_reduce
// CHECK:         dstrain.adam {{.*}} skip %[[OVF]]
module attributes {dsdist.grid = #dsdist.grid<dp = 1, sp = 2>} {
func.func @train_step(
    %w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
    %m: tensor<4xf32> {dstrain.state = {kind = "exp_avg", param = "w"}},
    %v: tensor<4xf32> {dstrain.state = {kind = "exp_avg_sq", param = "w"}},
    %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
    %step: tensor<i64> {dstrain.step},
    %x: tensor<1x4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
    attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
  %one = arith.constant dense<1> : tensor<i64>
  %it = arith.subi %step, %one : tensor<i64>
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-02, warmup_num_steps = 10, warmup_type = linear> at %it
  %l = arith.constant dense<1.0> : tensor<f32>
  %g = dsnn.mul %w, %s : tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  %n = dstrain.global_norm %g : tensor<4xf32>
  %p1, %m1, %v1 = dstrain.adam %w, %g, %m, %v step %step lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p1, %m1, %v1, %l, %lr, %n : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>
}
}
