// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// Max-reduce, Σ exp(x − max), then exp(x − max) / Σ: the max keeps exp finite.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func @softmax
// CHECK:         %[[NEGINF:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK:         %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x8xf32>) outs(%[[NEGINF]] : tensor<4xf32>)
// CHECK:           arith.maximumf
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[MAX]] : tensor<4x8xf32>, tensor<4xf32>)
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %[[MAX]], %[[SUM]] : tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:           arith.divf
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = dsnn.softmax %x dim -1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// log_softmax along dim 0: x − max − log Σ.
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @log_softmax_dim0
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK:           arith.maximumf
// CHECK:         linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK:           math.exp
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[COL]], #[[COL]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK:           arith.subf
// CHECK:           math.log
// CHECK:           arith.subf
func.func @log_softmax_dim0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = dsnn.log_softmax %x dim 0 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// softmax_grad: Σ dy·y along the dim, then y · (dy − Σ).
// CHECK-LABEL: func @softmax_grad
// CHECK:         %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : {{.*}}) outs(%{{.*}} : tensor<2x4xf32>)
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} ins(%arg0, %arg1, %[[S]] :
// CHECK:           arith.subf
// CHECK:           arith.mulf
func.func @softmax_grad(%y: tensor<2x4x8xf32>, %dy: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = dsnn.softmax_grad %y, %dy dim -1 : tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

// log_softmax_grad: Σ dy, then dy − exp(y) · Σ.
// CHECK-LABEL: func @log_softmax_grad
// CHECK:         %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT:       arith.mulf
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} ins(%arg0, %arg1, %[[S]] :
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK:           arith.subf
func.func @log_softmax_grad(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = dsnn.log_softmax_grad %y, %dy dim 1 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
