// RUN: ds-opt %s -canonicalize | FileCheck %s

// A constant step folds to DeepSpeed's learning rate at that step. Expected
// values are computed by hand from DeepSpeed's formulas.

// CHECK-LABEL: func @warmup_lr
// linear: 0 + (1e-3 - 0) * 25/100
// CHECK-DAG: %[[A:.*]] = arith.constant dense<2.500000e-04> : tensor<f32>
// log: 1e-4 + (1e-3 - 1e-4) * log(10)/log(100) = 1e-4 + 9e-4 * 0.5
// CHECK-DAG: %[[B:.*]] = arith.constant dense<5.500000e-04> : tensor<f32>
// after warmup: max_lr
// CHECK-DAG: %[[C:.*]] = arith.constant dense<1.000000e-03> : tensor<f32>
// warmup_num_steps = 1 acts as 2: step 1 is halfway, 1/2
// CHECK-DAG: %[[D:.*]] = arith.constant dense<5.000000e-04> : tensor<f32>
// CHECK: return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @warmup_lr() -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) {
  %s25 = arith.constant dense<25> : tensor<i64>
  %s9 = arith.constant dense<9> : tensor<i64>
  %s100 = arith.constant dense<100> : tensor<i64>
  %s1 = arith.constant dense<1> : tensor<i64>
  %a = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 100, warmup_type = linear> at %s25
  %b = dstrain.lr_schedule #dstrain.warmup_lr<min_lr = 1.0e-4, max_lr = 1.0e-3, warmup_num_steps = 100> at %s9
  %c = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 100> at %s100
  %d = dstrain.lr_schedule #dstrain.warmup_lr<max_lr = 1.0e-3, warmup_num_steps = 1, warmup_type = linear> at %s1
  return %a, %b, %c, %d : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func @warmup_decay_lr
// halfway through the decay: (1000 - 550) / (1000 - 100) = 0.5
// CHECK-DAG: %[[A:.*]] = arith.constant dense<5.000000e-04> : tensor<f32>
// past total_num_steps: clamped at min_lr
// CHECK-DAG: %[[B:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK: return %[[A]], %[[B]]
func.func @warmup_decay_lr() -> (tensor<f32>, tensor<f32>) {
  %s550 = arith.constant dense<550> : tensor<i64>
  %s2000 = arith.constant dense<2000> : tensor<i64>
  %a = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 1000, max_lr = 1.0e-3, warmup_num_steps = 100> at %s550
  %b = dstrain.lr_schedule #dstrain.warmup_decay_lr<total_num_steps = 1000, max_lr = 1.0e-3, warmup_num_steps = 100> at %s2000
  return %a, %b : tensor<f32>, tensor<f32>
}

// CHECK-LABEL: func @warmup_cosine_lr
// cosine: k = 599 - 100 + 1 = 500 of K = 1000, (1 + cos(pi/2)) / 2 = 0.5
// CHECK-DAG: %[[A:.*]] = arith.constant dense<5.000000e-04> : tensor<f32>
// linear warmup of the ratio: 0.2 + (1 - 0.2) * 50/100 = 0.6
// CHECK-DAG: %[[B:.*]] = arith.constant dense<6.000000e-04> : tensor<f32>
// CHECK: return %[[A]], %[[B]]
func.func @warmup_cosine_lr() -> (tensor<f32>, tensor<f32>) {
  %s599 = arith.constant dense<599> : tensor<i64>
  %s50 = arith.constant dense<50> : tensor<i64>
  %a = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 1100, warmup_num_steps = 100, cos_min_ratio = 0.0> at %s599
  %b = dstrain.lr_schedule #dstrain.warmup_cosine_lr<total_num_steps = 1100, warmup_min_ratio = 0.2, warmup_num_steps = 100, warmup_type = linear> at %s50
  return %a, %b : tensor<f32>, tensor<f32>
}

// OneCycle, a step before the first, and a step known only at run time stay.
// CHECK-LABEL: func @not_folded
// CHECK-COUNT-3: dstrain.lr_schedule
func.func @not_folded(%step: tensor<i64>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %s10 = arith.constant dense<10> : tensor<i64>
  %sm1 = arith.constant dense<-1> : tensor<i64>
  %a = dstrain.lr_schedule #dstrain.one_cycle<cycle_min_lr = 1.0e-4, cycle_max_lr = 1.0e-3> at %s10
  %b = dstrain.lr_schedule #dstrain.warmup_lr<> at %sm1
  %c = dstrain.lr_schedule #dstrain.warmup_lr<> at %step
  return %a, %b, %c : tensor<f32>, tensor<f32>, tensor<f32>
}
