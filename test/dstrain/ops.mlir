// RUN: ds-opt %s | ds-opt | FileCheck %s
// RUN: ds-opt %s --mlir-print-op-generic | ds-opt | FileCheck %s

// CHECK-LABEL: func @optimizers
func.func @optimizers(%p: tensor<4096xf32>, %g: tensor<4096xbf16>, %g32: tensor<4096xf32>,
                      %m: tensor<4096xf32>, %v: tensor<4096xf32>, %step: tensor<i64>,
                      %lr: tensor<f32>) {
  // CHECK: dstrain.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} lr %{{.*}} : tensor<4096xf32>, tensor<4096xbf16>
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %step lr %lr : tensor<4096xf32>, tensor<4096xbf16>
  // CHECK: dstrain.adam {{.*}} {adam_w_mode = false, beta1 = 8.000000e-01 : f64, beta2 = 0.000000e+00 : f64, bias_correction = false, eps = {{.*}}E-7 : f64, weight_decay = 1.000000e-02 : f64} : tensor<4096xf32>, tensor<4096xf32>
  %p2, %m2, %v2 = dstrain.adam %p, %g32, %m, %v step %step lr %lr
      {beta1 = 0.8 : f64, beta2 = 0.0 : f64, eps = 1.0e-6 : f64, weight_decay = 0.01 : f64,
       adam_w_mode = false, bias_correction = false} : tensor<4096xf32>, tensor<4096xf32>
  // CHECK: dstrain.lamb {{.*}} {max_coeff = 5.000000e+00 : f64, min_coeff = 1.000000e-01 : f64} : tensor<4096xf32>, tensor<4096xbf16>
  %p3, %m3, %v3 = dstrain.lamb %p, %g, %m, %v step %step lr %lr
      {max_coeff = 5.0 : f64, min_coeff = 0.1 : f64} : tensor<4096xf32>, tensor<4096xbf16>
  // CHECK: dstrain.sgd %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} lr %{{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : tensor<4096xf32>, tensor<4096xf32>
  %p4, %b4 = dstrain.sgd %p, %g32, %m step %step lr %lr {momentum = 0.9 : f64, nesterov = true}
      : tensor<4096xf32>, tensor<4096xf32>
  // The skip flag of fp16 loss scaling.
  %skip = arith.constant dense<false> : tensor<i1>
  // CHECK: dstrain.adam %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} step %{{.*}} lr %{{.*}} skip %{{.*}} : tensor<4096xf32>, tensor<4096xbf16>
  %p5, %m5, %v5 = dstrain.adam %p, %g, %m, %v step %step lr %lr skip %skip : tensor<4096xf32>, tensor<4096xbf16>
  // CHECK: dstrain.lamb {{.*}} skip %{{.*}} : tensor<4096xf32>, tensor<4096xbf16>
  %p6, %m6, %v6 = dstrain.lamb %p, %g, %m, %v step %step lr %lr skip %skip : tensor<4096xf32>, tensor<4096xbf16>
  // CHECK: dstrain.sgd {{.*}} skip %{{.*}} {momentum = 9.000000e-01 : f64} : tensor<4096xf32>, tensor<4096xf32>
  %p7, %b7 = dstrain.sgd %p, %g32, %m step %step lr %lr skip %skip {momentum = 0.9 : f64}
      : tensor<4096xf32>, tensor<4096xf32>
  return
}

// Any equal shapes, not only flat buffers; f16 grads too.
// CHECK-LABEL: func @shaped
// CHECK: dstrain.adam {{.*}} : tensor<64x16xf32>, tensor<64x16xf16>
func.func @shaped(%p: tensor<64x16xf32>, %g: tensor<64x16xf16>, %m: tensor<64x16xf32>,
                  %v: tensor<64x16xf32>, %step: tensor<i64>, %lr: tensor<f32>) -> tensor<64x16xf32> {
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %step lr %lr : tensor<64x16xf32>, tensor<64x16xf16>
  return %p1 : tensor<64x16xf32>
}

// CHECK-LABEL: func @loss_scaling
func.func @loss_scaling(%g0: tensor<4096xf16>, %g1: tensor<64xf16>, %scale: tensor<f32>,
                        %good: tensor<i64>, %hyst: tensor<i64>) -> tensor<i1> {
  // CHECK: %[[O:.*]] = dstrain.has_overflow %{{.*}}, %{{.*}} : tensor<4096xf16>, tensor<64xf16>
  %o = dstrain.has_overflow %g0, %g1 : tensor<4096xf16>, tensor<64xf16>
  // CHECK: dstrain.loss_scale_update scale %{{.*}} good_steps %{{.*}} hysteresis_left %{{.*}} overflow %[[O]]{{$}}
  %s1, %n1, %h1, %skip1 = dstrain.loss_scale_update scale %scale good_steps %good hysteresis_left %hyst overflow %o
  // CHECK: dstrain.loss_scale_update {{.*}} {consecutive_hysteresis = true, hysteresis = 4 : i64, min_scale = 1.280000e+02 : f64, scale_factor = 4.000000e+00 : f64, scale_window = 500 : i64}
  %s2, %n2, %h2, %skip2 = dstrain.loss_scale_update scale %scale good_steps %good hysteresis_left %hyst overflow %o
      {scale_window = 500 : i64, hysteresis = 4 : i64, min_scale = 128.0 : f64,
       consecutive_hysteresis = true, scale_factor = 4.0 : f64}
  // CHECK: dstrain.loss_scale_update {{.*}} {static_scale = 6.553600e+04 : f64}
  %s3, %n3, %h3, %skip3 = dstrain.loss_scale_update scale %scale good_steps %good hysteresis_left %hyst overflow %o
      {static_scale = 65536.0 : f64}
  return %skip1 : tensor<i1>
}

// CHECK-LABEL: func @norms
func.func @norms(%g0: tensor<4096xf32>, %g1: tensor<64xbf16>) -> (tensor<4096xf32>, tensor<64xbf16>, tensor<f32>, tensor<f32>) {
  // CHECK: dstrain.global_norm %{{.*}}, %{{.*}} : tensor<4096xf32>, tensor<64xbf16>
  %n = dstrain.global_norm %g0, %g1 : tensor<4096xf32>, tensor<64xbf16>
  // CHECK: %[[S:.*]] = dstrain.global_norm %{{.*}} squared : tensor<4096xf32>
  // CHECK: dstrain.global_norm %{{.*}} squared init %[[S]] : tensor<64xbf16>
  %s = dstrain.global_norm %g0 squared : tensor<4096xf32>
  %s2 = dstrain.global_norm %g1 squared init %s : tensor<64xbf16>
  // An f64 running sum prints its type; an f32 one does not.
  // CHECK: %[[S64:.*]] = dstrain.global_norm %{{.*}} squared : tensor<4096xf32> -> tensor<f64>
  // CHECK: dstrain.global_norm %{{.*}} squared init %[[S64]] : tensor<64xbf16> -> tensor<f64>
  %t = dstrain.global_norm %g0 squared : tensor<4096xf32> -> tensor<f64>
  %t2 = dstrain.global_norm %g1 squared init %t : tensor<64xbf16> -> tensor<f64>
  // CHECK: %{{.*}}:2, %{{.*}} = dstrain.clip_grad_norm %{{.*}}, %{{.*}} max_norm 1.000000e+00 : tensor<4096xf32>, tensor<64xbf16>
  %c:2, %norm = dstrain.clip_grad_norm %g0, %g1 max_norm 1.0 : tensor<4096xf32>, tensor<64xbf16>
  return %c#0, %c#1, %norm, %n : tensor<4096xf32>, tensor<64xbf16>, tensor<f32>, tensor<f32>
}

// Parameters at their DeepSpeed default are not printed.
// CHECK-LABEL: func @lr_schedules
func.func @lr_schedules(%step: tensor<i64>) {
  // CHECK: dstrain.lr_schedule #dstrain.warmup_lr<warmup_num_steps = 100, warmup_type = linear> at %{{.*}}
  %0 = dstrain.lr_schedule #dstrain.warmup_lr<min_lr = 0.0, max_lr = 1.0e-3, warmup_num_steps = 100, warmup_type = linear> at %step
  // CHECK: dstrain.lr_schedule #dstrain.warmup_lr<> at %{{.*}}
  %1 = dstrain.lr_schedule #dstrain.warmup_lr<> at %step
  // CHECK: dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 10000, min_lr = 1.000000e-05, warmup_num_steps = 100> at %{{.*}}
  %2 = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 10000, min_lr = 1.0e-5, warmup_num_steps = 100> at %step
  // CHECK: dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 10000, base_lr = 3.000000e-04, warmup_min_ratio = 1.000000e-01, warmup_num_steps = 100, cos_min_ratio = 0.000000e+00, warmup_type = linear> at %{{.*}}
  %3 = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 10000, base_lr = 3.0e-4, warmup_min_ratio = 0.1, warmup_num_steps = 100, cos_min_ratio = 0.0, warmup_type = linear> at %step
  // CHECK: dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.000000e-04, cycle_max_lr = 1.000000e-03, decay_lr_rate = 1.000000e-03, cycle_first_step_size = 1000, cycle_second_step_size = 500, cycle_first_stair_count = 2, cycle_second_stair_count = 3, decay_step_size = 10> at %{{.*}}
  %4 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3, decay_lr_rate = 1.0e-3, cycle_first_step_size = 1000, cycle_second_step_size = 500, cycle_first_stair_count = 2, cycle_second_stair_count = 3, decay_step_size = 10> at %step
  // CHECK: dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.000000e-04, cycle_max_lr = 1.000000e-03> at %{{.*}}
  %5 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3> at %step
  return
}

// CHECK-LABEL: func @checkpoints
func.func @checkpoints(%w: tensor<50x16xf32>, %m: tensor<50x16xf32>) -> tensor<50x16xf32> {
  // CHECK: dstrain.checkpoint_save %{{.*}}, %{{.*}} ["wte.weight", "wte.weight.exp_avg"] tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  dstrain.checkpoint_save %w, %m ["wte.weight", "wte.weight.exp_avg"] tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  // CHECK: dstrain.checkpoint_load ["wte.weight", "wte.weight.exp_avg"] tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  %w1, %m1 = dstrain.checkpoint_load ["wte.weight", "wte.weight.exp_avg"] tag "global_step100" : tensor<50x16xf32>, tensor<50x16xf32>
  return %w1 : tensor<50x16xf32>
}

// The bufferized update (made by bufferization, lowered by
// ds-lower-optimizer-to-runtime).
// CHECK-LABEL: func @apply
func.func @apply(%p: memref<64xf32>, %g: memref<64xbf16>, %m: memref<64xf32>, %v: memref<64xf32>,
                 %t: memref<i64>, %lr: memref<f32>) {
  // CHECK: dstrain.apply "adam" %{{.*}}, %{{.*}} state(%{{.*}}, %{{.*}}) step %{{.*}} lr %{{.*}} hyper {beta1 = 9.000000e-01 : f64} : memref<64xf32>, memref<64xbf16>, (memref<64xf32>, memref<64xf32>), memref<i64>, memref<f32>
  dstrain.apply "adam" %p, %g state(%m, %v) step %t lr %lr hyper {beta1 = 0.9 : f64}
      : memref<64xf32>, memref<64xbf16>, (memref<64xf32>, memref<64xf32>), memref<i64>, memref<f32>
  // CHECK: dstrain.apply "sgd" %{{.*}}, %{{.*}} state(%{{.*}}) step
  dstrain.apply "sgd" %p, %p state(%m) step %t lr %lr hyper {momentum = 0.9 : f64}
      : memref<64xf32>, memref<64xf32>, (memref<64xf32>), memref<i64>, memref<f32>
  return
}
