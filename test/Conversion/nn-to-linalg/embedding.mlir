// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// The gather reads the table row its index names.
// CHECK-DAG: #[[IDX:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @embedding
// CHECK:         linalg.generic {indexing_maps = [#[[IDX]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT:      %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT:      %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[V:.*]] = tensor.extract %arg1[%[[ROW]], %[[COL]]] : tensor<5x4xf32>
// CHECK-NEXT:      linalg.yield %[[V]] : f32
func.func @embedding(%ids: tensor<2x3xi64>, %w: tensor<5x4xf32>) -> tensor<2x3x4xf32> {
  %0 = dsnn.embedding %ids, %w : tensor<2x3xi64>, tensor<5x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// The scatter-add: a loop over positions carrying the table; each step adds
// a gradient row into the table row in place (outs is the table's slice).
// CHECK-LABEL: func @embedding_grad
// CHECK-DAG:     %[[IDS:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// CHECK-DAG:     %[[G:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK:         %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<5x4xf32>)
// CHECK:         %[[R:.*]] = scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[T:.*]] = %[[ZERO]]) -> (tensor<5x4xf32>)
// CHECK:           %[[ID:.*]] = tensor.extract %[[IDS]][%[[P]]] : tensor<6xi64>
// CHECK:           %[[V:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK:           %[[GR:.*]] = tensor.extract_slice %[[G]][%[[P]], 0] [1, 4] [1, 1]
// CHECK:           %[[TR:.*]] = tensor.extract_slice %[[T]][%[[V]], 0] [1, 4] [1, 1]
// CHECK:           %[[S:.*]] = linalg.generic {{.*}} ins(%[[GR]] : tensor<1x4xf32>) outs(%[[TR]] : tensor<1x4xf32>)
// CHECK:           %[[U:.*]] = tensor.insert_slice %[[S]] into %[[T]][%[[V]], 0] [1, 4] [1, 1]
// CHECK:           scf.yield %[[U]]
// CHECK:         return %[[R]]
func.func @embedding_grad(%ids: tensor<2x3xi64>, %dy: tensor<2x3x4xf32>) -> tensor<5x4xf32> {
  %0 = dsnn.embedding_grad %ids, %dy : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}
