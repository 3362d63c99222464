// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// Rows [N, V]: max, Σ exp(x − max), then one reduction over rows that sums
// log Σ + max − x[target] and counts the rows not ignored; the mean divides.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func @cross_entropy
// CHECK-DAG:     %[[IGN:.*]] = arith.constant -100 : i64
// CHECK-DAG:     %[[L:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x3x7xf32> into tensor<6x7xf32>
// CHECK-DAG:     %[[T:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[L]] : tensor<6x7xf32>)
// CHECK:           arith.maximumf
// CHECK:         %[[SE:.*]] = linalg.generic {{.*}} ins(%[[L]], %[[MAX]] :
// CHECK:           math.exp
// CHECK:         %[[TOT:.*]]:2 = linalg.generic {indexing_maps = [#[[ROW]], #[[ROW]], #[[ROW]], #[[ALL]], #[[ALL]]], iterator_types = ["reduction"]} ins(%[[T]], %[[MAX]], %[[SE]] :
// CHECK:           %[[VALID:.*]] = arith.cmpi ne, %{{.*}}, %[[IGN]] : i64
// CHECK:           %[[I:.*]] = linalg.index 0 : index
// CHECK:           tensor.extract %[[L]][%[[I]], %{{.*}}] : tensor<6x7xf32>
// CHECK:           math.log
// CHECK:           arith.select %[[VALID]]
// CHECK:         linalg.generic {{.*}}iterator_types = []} ins(%[[TOT]]#0, %[[TOT]]#1 : tensor<f32>, tensor<f32>)
// CHECK:           arith.divf
func.func @cross_entropy(%l: tensor<2x3x7xf32>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %0 = dsnn.cross_entropy %l, %t : tensor<2x3x7xf32>, tensor<2x3xi64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[ALL:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func @cross_entropy_grad
// CHECK:         %[[COUNT:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[ROW]], #[[ALL]], #[[ALL]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg2, %[[COUNT]] :
// CHECK:           math.exp
// CHECK:           linalg.index 1 : index
// CHECK:           arith.cmpi eq
// CHECK:         tensor.expand_shape
func.func @cross_entropy_grad(%l: tensor<2x3x7xf32>, %t: tensor<2x3xi64>, %d: tensor<f32>) -> tensor<2x3x7xf32> {
  %0 = dsnn.cross_entropy_grad %l, %t, %d : tensor<2x3x7xf32>, tensor<2x3xi64>, tensor<f32>
  return %0 : tensor<2x3x7xf32>
}

// -----

// CHECK-LABEL: func @mse_loss
// CHECK:         %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "reduction"]} ins(%arg0, %arg1 : tensor<2x3xf32>, tensor<2x3xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : tensor<f32>)
// CHECK:           arith.mulf
func.func @mse_loss(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<f32> {
  %0 = dsnn.mse_loss %x, %y : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<f32>
  return %0 : tensor<f32>
}
