// RUN: ds-opt %s -split-input-file -verify-diagnostics

// One case per dstrain verifier message.

func.func @param_type(%p: tensor<8xbf16>, %g: tensor<8xbf16>, %m: tensor<8xbf16>, %v: tensor<8xbf16>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op param element type 'bf16' must be f32: optimizers update f32 master weights and state}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr : tensor<8xbf16>, tensor<8xbf16>
  return
}

// -----

func.func @grad_type(%p: tensor<8xf32>, %g: tensor<8xf64>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op grad element type 'f64' must be f32, bf16 or f16}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr : tensor<8xf32>, tensor<8xf64>
  return
}

// -----

func.func @grad_shape(%p: tensor<8xf32>, %g: tensor<4x2xbf16>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op grad shape [4, 2] does not match param shape [8]}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr : tensor<8xf32>, tensor<4x2xbf16>
  return
}

// -----

func.func @beta1(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op beta1 is 1 but must be in [0, 1)}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr {beta1 = 1.0 : f64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @beta2(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.lamb' op beta2 is -0.5 but must be in [0, 1)}}
  %0:3 = dstrain.lamb %p, %g, %m, %v step %t lr %lr {beta2 = -0.5 : f64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @eps(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op eps is 0 but must be > 0}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr {eps = 0.0 : f64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @weight_decay(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.adam' op weight_decay is -0.01 but must be >= 0}}
  %0:3 = dstrain.adam %p, %g, %m, %v step %t lr %lr {weight_decay = -0.01 : f64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @coeffs(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.lamb' op trust-ratio bounds need 0 <= min_coeff <= max_coeff, got min_coeff = 20 and max_coeff = 10}}
  %0:3 = dstrain.lamb %p, %g, %m, %v step %t lr %lr {min_coeff = 20.0 : f64} : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @momentum(%p: tensor<8xf32>, %g: tensor<8xf16>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.sgd' op momentum is -0.9 but must be >= 0}}
  %0:2 = dstrain.sgd %p, %g, %b step %t lr %lr {momentum = -0.9 : f64} : tensor<8xf32>, tensor<8xf16>
  return
}

// -----

func.func @nesterov_momentum(%p: tensor<8xf32>, %g: tensor<8xf16>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.sgd' op nesterov needs momentum > 0 and dampening 0, got momentum = 0 and dampening = 0}}
  %0:2 = dstrain.sgd %p, %g, %b step %t lr %lr {nesterov = true} : tensor<8xf32>, tensor<8xf16>
  return
}

// -----

func.func @nesterov_dampening(%p: tensor<8xf32>, %g: tensor<8xf16>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) {
  // expected-error @+1 {{'dstrain.sgd' op nesterov needs momentum > 0 and dampening 0, got momentum = 0.9 and dampening = 0.1}}
  %0:2 = dstrain.sgd %p, %g, %b step %t lr %lr {nesterov = true, momentum = 0.9 : f64, dampening = 0.1 : f64} : tensor<8xf32>, tensor<8xf16>
  return
}

// -----

func.func @overflow_empty() {
  // expected-error @+1 {{'dstrain.has_overflow' op needs at least one tensor}}
  %0 = "dstrain.has_overflow"() : () -> tensor<i1>
  return
}

// -----

func.func @norm_empty() {
  // expected-error @+1 {{'dstrain.global_norm' op needs at least one tensor}}
  %0 = "dstrain.global_norm"() {operandSegmentSizes = array<i32: 0, 0>} : () -> tensor<f32>
  return
}

// -----

func.func @norm_init_unsquared(%g: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dstrain.global_norm' op takes `init` only with `squared`}}
  %0 = "dstrain.global_norm"(%g, %s) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @norm_init_type(%g: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'dstrain.global_norm' op continues `init` of type 'tensor<f32>' into a result of type 'tensor<f64>'; a running sum keeps its type}}
  %0 = "dstrain.global_norm"(%g, %s) {squared, operandSegmentSizes = array<i32: 1, 1>} : (tensor<8xf32>, tensor<f32>) -> tensor<f64>
  return
}

// -----

func.func @norm_f64_unsquared(%g: tensor<8xf32>) {
  // expected-error @+1 {{'dstrain.global_norm' op returns the norm as tensor<f32>; only a `squared` running sum may be f64}}
  %0 = "dstrain.global_norm"(%g) {operandSegmentSizes = array<i32: 1, 0>} : (tensor<8xf32>) -> tensor<f64>
  return
}

// -----

func.func @clip_max_norm(%g: tensor<8xf32>) {
  // expected-error @+1 {{'dstrain.clip_grad_norm' op max_norm is -1 but must be > 0}}
  %0, %n = dstrain.clip_grad_norm %g max_norm -1.0 : tensor<8xf32>
  return
}

// -----

func.func @scale_window(%s: tensor<f32>, %n: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) {
  // expected-error @+1 {{'dstrain.loss_scale_update' op scale_window is 0 but must be >= 1}}
  %0:4 = dstrain.loss_scale_update scale %s good_steps %n hysteresis_left %h overflow %o {scale_window = 0 : i64}
  return
}

// -----

func.func @hysteresis(%s: tensor<f32>, %n: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) {
  // expected-error @+1 {{'dstrain.loss_scale_update' op hysteresis is 0 but must be >= 1}}
  %0:4 = dstrain.loss_scale_update scale %s good_steps %n hysteresis_left %h overflow %o {hysteresis = 0 : i64}
  return
}

// -----

func.func @min_scale(%s: tensor<f32>, %n: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) {
  // expected-error @+1 {{'dstrain.loss_scale_update' op min_scale is 0 but must be > 0}}
  %0:4 = dstrain.loss_scale_update scale %s good_steps %n hysteresis_left %h overflow %o {min_scale = 0.0 : f64}
  return
}

// -----

func.func @scale_factor(%s: tensor<f32>, %n: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) {
  // expected-error @+1 {{'dstrain.loss_scale_update' op scale_factor is 1 but must be > 1}}
  %0:4 = dstrain.loss_scale_update scale %s good_steps %n hysteresis_left %h overflow %o {scale_factor = 1.0 : f64}
  return
}

// -----

func.func @static_scale(%s: tensor<f32>, %n: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) {
  // expected-error @+1 {{'dstrain.loss_scale_update' op static_scale is -1 but must be > 0}}
  %0:4 = dstrain.loss_scale_update scale %s good_steps %n hysteresis_left %h overflow %o {static_scale = -1.0 : f64}
  return
}

// -----

func.func @warmup_range(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_lr: needs 0 <= min_lr <= max_lr, got min_lr = 0.01 and max_lr = 0.001}}
  %0 = dstrain.lr_schedule #dstrain.warmup_lr<min_lr = 0.01, max_lr = 0.001> at %t
  return
}

// -----

func.func @warmup_steps(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_lr: warmup_num_steps is 0 but must be >= 1}}
  %0 = dstrain.lr_schedule #dstrain.warmup_lr<warmup_num_steps = 0> at %t
  return
}

// -----

func.func @decay_range(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_decay_lr: needs 0 <= min_lr <= max_lr, got min_lr = -1 and max_lr = 0.001}}
  %0 = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 100, min_lr = -1.0> at %t
  return
}

// -----

func.func @decay_length(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_decay_lr: total_num_steps is 100 but must exceed the warmup, max(2, warmup_num_steps) = 100}}
  %0 = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 100, warmup_num_steps = 100> at %t
  return
}

// -----

func.func @decay_length_clamped(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_decay_lr: total_num_steps is 2 but must exceed the warmup, max(2, warmup_num_steps) = 2}}
  %0 = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 2, warmup_num_steps = 1> at %t
  return
}

// -----

func.func @cosine_base(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_cosine_lr: base_lr is -0.1 but must be >= 0}}
  %0 = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 100, base_lr = -0.1, warmup_num_steps = 10> at %t
  return
}

// -----

func.func @cosine_ratio(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_cosine_lr: cos_min_ratio is 1.5 but must be in [0, 1]}}
  %0 = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 100, warmup_num_steps = 10, cos_min_ratio = 1.5> at %t
  return
}

// -----

func.func @cosine_warmup_ratio(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_cosine_lr: warmup_min_ratio is -0.5 but must be in [0, 1]}}
  %0 = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 100, warmup_num_steps = 10, warmup_min_ratio = -0.5> at %t
  return
}

// -----

func.func @cosine_length(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.warmup_cosine_lr: total_num_steps is 100 but must exceed the warmup, max(2, warmup_num_steps) = 1000}}
  %0 = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 100> at %t
  return
}

// -----

func.func @cycle_range(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: needs 0 <= cycle_min_lr <= cycle_max_lr, got cycle_min_lr = 0.01 and cycle_max_lr = 0.001}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.01, cycle_max_lr = 0.001> at %t
  return
}

// -----

func.func @cycle_decay_rate(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: decay_lr_rate is -1 but must be >= 0}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, decay_lr_rate = -1.0> at %t
  return
}

// -----

func.func @cycle_step(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: cycle_first_step_size is 0 but must be >= 1}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, cycle_first_step_size = 0> at %t
  return
}

// -----

func.func @cycle_second_step(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: cycle_second_step_size is 0 but must be >= 1}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, cycle_second_step_size = 0> at %t
  return
}

// -----

func.func @cycle_stairs(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: cycle_first_stair_count is -1 but must be >= 0}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, cycle_first_stair_count = -1> at %t
  return
}

// -----

func.func @cycle_second_stairs(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: cycle_second_stair_count is -2 but must be >= 0}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, cycle_second_stair_count = -2> at %t
  return
}

// -----

func.func @cycle_decay_step(%t: tensor<i64>) {
  // expected-error @+1 {{#dstrain.one_cycle: decay_step_size is -1 but must be >= 0}}
  %0 = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 0.0001, cycle_max_lr = 0.001, decay_step_size = -1> at %t
  return
}

// -----

func.func @ckpt_tag(%w: tensor<8xf32>) {
  // expected-error @+1 {{'dstrain.checkpoint_save' op tag must not be empty; it names the checkpoint}}
  dstrain.checkpoint_save %w ["w"] tag "" : tensor<8xf32>
  return
}

// -----

func.func @ckpt_count(%w: tensor<8xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{'dstrain.checkpoint_save' op has 2 tensors but 1 names; give one name per tensor}}
  dstrain.checkpoint_save %w, %m ["w"] tag "step1" : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @ckpt_load_count() {
  // expected-error @+1 {{'dstrain.checkpoint_load' op has 1 results but 2 names; give one name per tensor}}
  %0 = dstrain.checkpoint_load ["w", "m"] tag "step1" : tensor<8xf32>
  return
}

// -----

func.func @ckpt_empty_name(%w: tensor<8xf32>, %m: tensor<8xf32>) {
  // expected-error @+1 {{'dstrain.checkpoint_save' op name 1 is empty}}
  dstrain.checkpoint_save %w, %m ["w", ""] tag "step1" : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @ckpt_duplicate() {
  // expected-error @+1 {{'dstrain.checkpoint_load' op name "w" appears twice}}
  %0:2 = dstrain.checkpoint_load ["w", "w"] tag "step1" : tensor<8xf32>, tensor<8xf32>
  return
}

// -----

func.func @apply_unknown_optimizer(%p: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  // expected-error @+1 {{'dstrain.apply' op optimizer is "adagrad" but must be "adam", "lamb" or "sgd"}}
  dstrain.apply "adagrad" %p, %p state(%p) step %t lr %lr hyper {} : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

func.func @apply_state_count(%p: memref<8xf32>, %t: memref<i64>, %lr: memref<f32>) {
  // expected-error @+1 {{'dstrain.apply' op "adam" keeps 2 state buffer(s), got 1}}
  dstrain.apply "adam" %p, %p state(%p) step %t lr %lr hyper {} : memref<8xf32>, memref<8xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

func.func @apply_grad_shape(%p: memref<8xf32>, %g: memref<4xf32>, %t: memref<i64>, %lr: memref<f32>) {
  // expected-error @+1 {{'dstrain.apply' op grad shape differs from the param's}}
  dstrain.apply "sgd" %p, %g state(%p) step %t lr %lr hyper {} : memref<8xf32>, memref<4xf32>, (memref<8xf32>), memref<i64>, memref<f32>
  return
}

// -----

func.func @apply_state_type(%p: memref<8xf32>, %s: memref<8xf16>, %t: memref<i64>, %lr: memref<f32>) {
  // expected-error @+1 {{'dstrain.apply' op state buffers must be f32 of the param's shape}}
  dstrain.apply "sgd" %p, %p state(%s) step %t lr %lr hyper {} : memref<8xf32>, memref<8xf32>, (memref<8xf16>), memref<i64>, memref<f32>
  return
}
