// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// One collapse or expand when the shapes nest; otherwise through 1-D.
// CHECK-LABEL: func @reshape
// CHECK:         %[[C:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK:         %[[F:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK:         %[[T:.*]] = tensor.expand_shape %[[F]] {{\[}}[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// CHECK:         %[[S:.*]] = tensor.collapse_shape %arg1 [] : tensor<1x1xf32> into tensor<f32>
// CHECK:         return %[[C]], %[[T]], %[[S]]
func.func @reshape(%x: tensor<2x3xf32>, %s: tensor<1x1xf32>) -> (tensor<6xf32>, tensor<3x2xf32>, tensor<f32>) {
  %0 = dsnn.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = dsnn.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %2 = dsnn.reshape %s : tensor<1x1xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<6xf32>, tensor<3x2xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func @transpose
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<2x4x8x3xf32>
// CHECK:         linalg.transpose ins(%arg0 : tensor<2x8x4x3xf32>) outs(%[[E]] : tensor<2x4x8x3xf32>) permutation = [0, 2, 1, 3]
func.func @transpose(%x: tensor<2x8x4x3xf32>) -> tensor<2x4x8x3xf32> {
  %0 = dsnn.transpose %x perm [0, 2, 1, 3] : tensor<2x8x4x3xf32> -> tensor<2x4x8x3xf32>
  return %0 : tensor<2x4x8x3xf32>
}

// -----

// CHECK-LABEL: func @split_concat
// CHECK:         %[[Q:.*]] = tensor.extract_slice %arg0[0, 0, 0] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xf32> to tensor<2x8x16xf32>
// CHECK:         %[[K:.*]] = tensor.extract_slice %arg0[0, 0, 16] [2, 8, 16] [1, 1, 1]
// CHECK:         %[[V:.*]] = tensor.extract_slice %arg0[0, 0, 32] [2, 8, 16] [1, 1, 1]
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<2x8x48xf32>
// CHECK:         %[[I0:.*]] = tensor.insert_slice %[[V]] into %[[E]][0, 0, 0] [2, 8, 16] [1, 1, 1]
// CHECK:         %[[I1:.*]] = tensor.insert_slice %[[Q]] into %[[I0]][0, 0, 16] [2, 8, 16] [1, 1, 1]
// CHECK:         %[[I2:.*]] = tensor.insert_slice %[[K]] into %[[I1]][0, 0, 32] [2, 8, 16] [1, 1, 1]
// CHECK:         return %[[I2]]
func.func @split_concat(%x: tensor<2x8x48xf32>) -> tensor<2x8x48xf32> {
  %q, %k, %v = dsnn.split %x dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %0 = dsnn.concat %v, %q, %k dim -1 : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x48xf32>
  return %0 : tensor<2x8x48xf32>
}

// -----

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[MID:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func @reduce
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[MID]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%[[Z]] : tensor<3xf32>)
// CHECK:           arith.addf
// CHECK:         %[[S2:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction"]
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[S2]] : tensor<3xf32>)
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:         %[[K:.*]] = tensor.expand_shape %[[MEAN]] {{\[}}[0, 1, 2]] output_shape [1, 3, 1]
// CHECK:         return %[[SUM]], %[[K]]
func.func @reduce(%x: tensor<2x3x4xf32>) -> (tensor<3xf32>, tensor<1x3x1xf32>) {
  %0 = dsnn.reduce_sum %x dims [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  %1 = dsnn.reduce_mean %x dims [2, 0] {keep_dims} : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  return %0, %1 : tensor<3xf32>, tensor<1x3x1xf32>
}
