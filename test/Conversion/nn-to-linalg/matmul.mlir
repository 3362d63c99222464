// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// The forms the BLAS rewrite matches: linalg.matmul / linalg.batch_matmul
// into a zero fill, a transposed operand only through indexing_maps.

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @linear_bias
// CHECK:         %[[X:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2]] : tensor<2x8x16xf32> into tensor<16x16xf32>
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<16x64xf32>)
// CHECK:         %[[MM:.*]] = linalg.matmul indexing_maps = [#[[A]], #[[WT]], #[[C]]] ins(%[[X]], %arg1 : tensor<16x16xf32>, tensor<64x16xf32>) outs(%[[Z]] : tensor<16x64xf32>)
// CHECK:         %[[Y:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[BIAS]], #{{.*}}], iterator_types = ["parallel", "parallel"]} ins(%[[MM]], %arg2 : tensor<16x64xf32>, tensor<64xf32>)
// CHECK:           arith.addf
// CHECK:         tensor.expand_shape %[[Y]] {{\[}}[0, 1], [2]] output_shape [2, 8, 64]
func.func @linear_bias(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %y = dsnn.linear %x, %w, %b : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// No bias: the matmul result is the result, no copy.
// CHECK-LABEL: func @linear_no_bias
// CHECK:         %[[MM:.*]] = linalg.matmul
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[MM]]
func.func @linear_no_bias(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>) -> tensor<8x4xf32> {
  %y = dsnn.linear %x, %w : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// CHECK-LABEL: func @matmul_plain
// CHECK:         linalg.matmul ins(%arg0, %arg1 : tensor<4x5xf32>, tensor<5x6xf32>) outs(%{{.*}} : tensor<4x6xf32>)
func.func @matmul_plain(%a: tensor<4x5xf32>, %b: tensor<5x6xf32>) -> tensor<4x6xf32> {
  %y = dsnn.matmul %a, %b : tensor<4x5xf32>, tensor<5x6xf32> -> tensor<4x6xf32>
  return %y : tensor<4x6xf32>
}

// -----

// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @matmul_transposed
// CHECK:         linalg.matmul indexing_maps = [#[[AT]], #[[B]], #[[C]]] ins(%arg0, %arg1 : tensor<5x4xf32>, tensor<5x6xf32>)
// CHECK:         linalg.matmul indexing_maps = [#[[AT]], #[[BT]], #[[C]]] ins(%arg0, %arg2 : tensor<5x4xf32>, tensor<6x5xf32>)
func.func @matmul_transposed(%a: tensor<5x4xf32>, %b: tensor<5x6xf32>, %bt: tensor<6x5xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %y = dsnn.matmul %a, %b {transpose_a} : tensor<5x4xf32>, tensor<5x6xf32> -> tensor<4x6xf32>
  %z = dsnn.matmul %a, %bt {transpose_a, transpose_b} : tensor<5x4xf32>, tensor<6x5xf32> -> tensor<4x6xf32>
  return %y, %z : tensor<4x6xf32>, tensor<4x6xf32>
}

// -----

// Leading batch dims fold into the one batch dim of linalg.batch_matmul.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @batch_matmul_rank4
// CHECK-DAG:     %[[A3:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2], [3]] : tensor<2x3x4x5xf32> into tensor<6x4x5xf32>
// CHECK-DAG:     %[[B3:.*]] = tensor.collapse_shape %arg1 {{\[}}[0, 1], [2], [3]] : tensor<2x3x6x5xf32> into tensor<6x6x5xf32>
// CHECK:         %[[MM:.*]] = linalg.batch_matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[A3]], %[[B3]] : tensor<6x4x5xf32>, tensor<6x6x5xf32>) outs(%{{.*}} : tensor<6x4x6xf32>)
// CHECK:         tensor.expand_shape %[[MM]] {{\[}}[0, 1], [2], [3]] output_shape [2, 3, 4, 6]
func.func @batch_matmul_rank4(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x6x5xf32>) -> tensor<2x3x4x6xf32> {
  %y = dsnn.batch_matmul %a, %b {transpose_b} : tensor<2x3x4x5xf32>, tensor<2x3x6x5xf32> -> tensor<2x3x4x6xf32>
  return %y : tensor<2x3x4x6xf32>
}

// -----

// bf16 operands are widened (exactly) and accumulate in f32, so the
// contraction is an f32 one BLAS serves; the result rounds once.
// CHECK-LABEL: func @matmul_bf16
// CHECK:         %[[A:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x5xbf16>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:         %[[B:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<5x6xbf16>) outs(%{{.*}} : tensor<5x6xf32>)
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x5xf32>, tensor<5x6xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[MM]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xbf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
func.func @matmul_bf16(%a: tensor<4x5xbf16>, %b: tensor<5x6xbf16>) -> tensor<4x6xbf16> {
  %y = dsnn.matmul %a, %b : tensor<4x5xbf16>, tensor<5x6xbf16> -> tensor<4x6xbf16>
  return %y : tensor<4x6xbf16>
}
