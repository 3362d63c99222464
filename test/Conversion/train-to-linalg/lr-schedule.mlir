// RUN: ds-opt %s --ds-lower-train-to-linalg --split-input-file | FileCheck %s --implicit-check-not="dstrain."

// The formula runs in f64 on the extracted step and is rounded to f32 once.
// The two sides of a select are independent: their order in the IR is the
// order the host compiler evaluated the builder's arguments in (gcc and
// clang differ), hence CHECK-DAG.
// CHECK-LABEL: func @warmup_log
// CHECK-SAME:    (%[[T:.*]]: tensor<i64>)
// CHECK:         %[[S:.*]] = tensor.extract %[[T]][] : tensor<i64>
// CHECK:         %[[SF:.*]] = arith.sitofp %[[S]] : i64 to f64
// CHECK-DAG:     %[[S1:.*]] = arith.addf %[[SF]], %{{.*}} : f64
// CHECK-DAG:     math.log %[[S1]] : f64
// CHECK-DAG:     %[[WARM:.*]] = arith.cmpf olt, %[[SF]], %{{.*}} : f64
// CHECK:         arith.select %[[WARM]]
// CHECK:         %[[LR:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK:         %[[R:.*]] = tensor.from_elements %[[LR]] : tensor<f32>
// CHECK:         return %[[R]]
func.func @warmup_log(%t: tensor<i64>) -> tensor<f32> {
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 100> at %t
  return %lr : tensor<f32>
}

// -----

// CHECK-LABEL: func @warmup_decay
// CHECK:         arith.maximumf %{{.*}} : f64
// CHECK:         arith.select
// CHECK:         arith.truncf
func.func @warmup_decay(%t: tensor<i64>) -> tensor<f32> {
  %lr = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 1000, max_lr = 1.0e-3, warmup_num_steps = 100, warmup_type = linear> at %t
  return %lr : tensor<f32>
}

// -----

// CHECK-LABEL: func @warmup_cosine
// CHECK:         math.cos %{{.*}} : f64
// CHECK:         arith.select
// CHECK:         arith.truncf
func.func @warmup_cosine(%t: tensor<i64>) -> tensor<f32> {
  %lr = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 1000, base_lr = 3.0e-4, warmup_num_steps = 100> at %t
  return %lr : tensor<f32>
}

// -----

// OneCycle: the position in the cycle needs a floor; past the cycle the
// rate decays.
// CHECK-LABEL: func @one_cycle
// CHECK:         math.floor %{{.*}} : f64
// CHECK:         arith.cmpf ole
// CHECK:         arith.cmpf olt
// CHECK:         arith.select
// CHECK:         arith.truncf
func.func @one_cycle(%t: tensor<i64>) -> tensor<f32> {
  %lr = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3, decay_lr_rate = 0.1, cycle_first_step_size = 100, decay_step_size = 10> at %t
  return %lr : tensor<f32>
}

// -----

// A constant step is the folder's business: the op folds to a constant.
// CHECK-LABEL: func @constant_step
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<{{.*}}> : tensor<f32>
// CHECK-NEXT:    return %[[C]]
func.func @constant_step() -> tensor<f32> {
  %t = arith.constant dense<3> : tensor<i64>
  %lr = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 10, warmup_type = linear> at %t
  return %lr : tensor<f32>
}

// -----

// The folder leaves OneCycle alone; the lowering evaluates the same formula
// for a constant step: at step 2 of a 4-step rise, 1e-4 + 9e-4 * 3/4.
// CHECK-LABEL: func @one_cycle_constant_step
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<7.750000e-04> : tensor<f32>
// CHECK-NEXT:    return %[[C]]
func.func @one_cycle_constant_step() -> tensor<f32> {
  %t = arith.constant dense<2> : tensor<i64>
  %lr = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3, cycle_first_step_size = 4> at %t
  return %lr : tensor<f32>
}
