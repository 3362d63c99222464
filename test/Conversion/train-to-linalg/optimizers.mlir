// RUN: ds-opt %s --ds-lower-train-to-linalg=optimizer-kernels=false --split-input-file | FileCheck %s --implicit-check-not="dstrain."

// Adam (AdamW mode) is one generic: the grad is the only input, parameter
// and moments are the outs (updated in place), and the step's scalars are
// computed once outside the loop.
// CHECK-DAG:   #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @adamw
// CHECK-SAME:    (%[[P:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x8xbf16>, %[[M:.*]]: tensor<4x8xf32>, %[[V:.*]]: tensor<4x8xf32>, %[[T:.*]]: tensor<i64>, %[[LR:.*]]: tensor<f32>)
// CHECK-DAG:     tensor.extract %[[LR]][] : tensor<f32>
// CHECK-DAG:     %[[STEP:.*]] = tensor.extract %[[T]][] : tensor<i64>
// CHECK:         math.powf
// CHECK:         math.powf
// CHECK:         %[[R:.*]]:3 = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[G]] : tensor<4x8xbf16>) outs(%[[P]], %[[M]], %[[V]] :
// CHECK:         ^bb0(%[[GI:.*]]: bf16, %[[PI:.*]]: f32, %[[MI:.*]]: f32, %[[VI:.*]]: f32):
// CHECK:           arith.extf %[[GI]] : bf16 to f32
// CHECK:           math.sqrt
// CHECK:           arith.mulf %[[PI]]
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @adamw(%p: tensor<4x8xf32>, %g: tensor<4x8xbf16>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr {weight_decay = 0.01 : f64} : tensor<4x8xf32>, tensor<4x8xbf16>
  return %p1, %m1, %v1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Without bias correction the step is not read at all.
// CHECK-LABEL: func @adam_no_bias_correction
// CHECK-SAME:    %[[T:[^:]*]]: tensor<i64>
// CHECK-NOT:     tensor.extract %[[T]]
// CHECK-NOT:     math.powf
// CHECK:         linalg.generic
func.func @adam_no_bias_correction(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr {bias_correction = false} : tensor<8xf32>, tensor<8xf32>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Lamb is two passes over the same reads: a reduction of ‖p‖² and ‖u‖²
// into two 0-d accumulators, then the in-place update scaled by the clamped
// trust ratio.
// CHECK-LABEL: func @lamb
// CHECK-SAME:    (%[[P:[^:]*]]: tensor<8xf32>, %[[G:[^:]*]]: tensor<8xf16>, %[[M:[^:]*]]: tensor<8xf32>, %[[V:[^:]*]]: tensor<8xf32>
// CHECK:         %[[SUMS:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]}
// CHECK-SAME:      ins(%[[G]], %[[P]], %[[M]], %[[V]] :
// CHECK-SAME:      outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// CHECK:         %[[W2:.*]] = tensor.extract %[[SUMS]]#0[]
// CHECK:         %[[W:.*]] = math.sqrt %[[W2]] : f32
// CHECK:         %[[U2:.*]] = tensor.extract %[[SUMS]]#1[]
// CHECK:         %[[U:.*]] = math.sqrt %[[U2]] : f32
// CHECK:         %[[RATIO:.*]] = arith.divf %[[W]], %[[U]] : f32
// CHECK:         %[[LO:.*]] = arith.maximumf %[[RATIO]]
// CHECK:         %[[HI:.*]] = arith.minimumf %[[LO]]
// CHECK:         arith.select %{{.*}}, %[[HI]], %{{.*}} : f32
// CHECK:         %[[R:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel"]}
// CHECK-SAME:      ins(%[[G]] : tensor<8xf16>) outs(%[[P]], %[[M]], %[[V]] :
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @lamb(%p: tensor<8xf32>, %g: tensor<8xf16>, %m: tensor<8xf32>, %v: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1, %m1, %v1 = dstrain.lamb %p, %g, %m, %v step %t lr %lr {weight_decay = 0.01 : f64} : tensor<8xf32>, tensor<8xf16>
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// SGD with momentum: one generic; the buffer is the gradient at step 1.
// CHECK-LABEL: func @sgd_momentum
// CHECK-SAME:    (%[[P:[^:]*]]: tensor<8xf32>, %[[G:[^:]*]]: tensor<8xf32>, %[[B:[^:]*]]: tensor<8xf32>, %[[T:[^:]*]]: tensor<i64>
// CHECK:         %[[STEP:.*]] = tensor.extract %[[T]][]
// CHECK:         %[[FIRST:.*]] = arith.cmpi eq, %[[STEP]], %c1_i64
// CHECK:         %[[R:.*]]:2 = linalg.generic
// CHECK-SAME:      ins(%[[G]] : tensor<8xf32>) outs(%[[P]], %[[B]] :
// CHECK:         ^bb0(%[[GI:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:           arith.select %[[FIRST]], %[[GI]], %{{.*}} : f32
// CHECK:         return %[[R]]#0, %[[R]]#1
func.func @sgd_momentum(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %p1, %b1 = dstrain.sgd %p, %g, %b step %t lr %lr {momentum = 0.9 : f64, nesterov = true} : tensor<8xf32>, tensor<8xf32>
  return %p1, %b1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Without momentum the buffer is neither read nor written: it is returned
// as it came.
// CHECK-LABEL: func @sgd_plain
// CHECK-SAME:    (%[[P:[^:]*]]: tensor<8xf32>, %[[G:[^:]*]]: tensor<8xf32>, %[[B:[^:]*]]: tensor<8xf32>
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[G]] : tensor<8xf32>) outs(%[[P]] : tensor<8xf32>)
// CHECK:         return %[[R]], %[[B]]
func.func @sgd_plain(%p: tensor<8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>, %t: tensor<i64>, %lr: tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %p1, %b1 = dstrain.sgd %p, %g, %b step %t lr %lr : tensor<8xf32>, tensor<8xf32>
  return %p1, %b1 : tensor<8xf32>, tensor<8xf32>
}
