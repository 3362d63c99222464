// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// Q·Kᵀ as a transposed-B batch matmul, one generic for scale and causal
// mask, a softmax, then P·V.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @attention_causal
// CHECK-DAG:     %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG:     %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:     %[[Q:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2], [3]] : tensor<2x4x8x4xf32> into tensor<8x8x4xf32>
// CHECK-DAG:     %[[K:.*]] = tensor.collapse_shape %arg1
// CHECK-DAG:     %[[V:.*]] = tensor.collapse_shape %arg2
// CHECK:         %[[S:.*]] = linalg.batch_matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%[[Q]], %[[K]] : tensor<8x8x4xf32>, tensor<8x8x4xf32>) outs(%{{.*}} : tensor<8x8x8xf32>)
// CHECK:         %[[L:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<8x8x8xf32>)
// CHECK:           %[[SC:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK:           %[[J:.*]] = linalg.index 2 : index
// CHECK:           %[[FUT:.*]] = arith.cmpi ugt, %[[J]], %[[I]] : index
// CHECK:           arith.select %[[FUT]], %[[NEGINF]], %[[SC]] : f32
// CHECK:         linalg.generic {{.*}} ins(%[[L]] : tensor<8x8x8xf32>)
// CHECK:           arith.maximumf
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK:         %[[P:.*]] = linalg.generic
// CHECK:           arith.divf
// CHECK:         %[[O:.*]] = linalg.batch_matmul ins(%[[P]], %[[V]] : tensor<8x8x8xf32>, tensor<8x8x4xf32>) outs(%{{.*}} : tensor<8x8x4xf32>)
// CHECK:         tensor.expand_shape %[[O]] {{\[}}[0, 1], [2], [3]] output_shape [2, 4, 8, 4]
func.func @attention_causal(%q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x4xf32>) -> tensor<2x4x8x4xf32> {
  %o = dsnn.attention %q, %k, %v {causal} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  return %o : tensor<2x4x8x4xf32>
}

// -----

// Without causal there is no mask; the scale attribute wins over 1/√D.
// CHECK-LABEL: func @attention_scaled
// CHECK:         arith.constant 2.500000e-01 : f32
// CHECK:         linalg.batch_matmul
// CHECK-NOT:     linalg.index
// CHECK:         linalg.batch_matmul
func.func @attention_scaled(%q: tensor<2x4x3xf32>, %k: tensor<2x6x3xf32>, %v: tensor<2x6x5xf32>) -> tensor<2x4x5xf32> {
  %o = dsnn.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x3xf32>, tensor<2x6x3xf32>, tensor<2x6x5xf32> -> tensor<2x4x5xf32>
  return %o : tensor<2x4x5xf32>
}

// -----

// Recomputed P, then dV = Pᵀ·dO, dP = dO·Vᵀ, dS, dQ = dS·K, dK = dSᵀ·Q.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @attention_grad
// CHECK:         linalg.batch_matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%arg0, %arg1 :
// CHECK:         linalg.generic
// CHECK:           arith.select
// CHECK:         linalg.generic
// CHECK:           arith.maximumf
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK:         %[[P:.*]] = linalg.generic
// CHECK:           arith.divf
// CHECK:         %[[DV:.*]] = linalg.batch_matmul indexing_maps = [#[[AT]], #[[B]], #[[C]]] ins(%[[P]], %arg3 :
// CHECK:         %[[DP:.*]] = linalg.batch_matmul indexing_maps = [#[[A]], #[[BT]], #[[C]]] ins(%arg3, %arg2 :
// CHECK:         %[[RS:.*]] = linalg.generic {{.*}} ins(%[[DP]], %[[P]] :
// CHECK:         %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[DP]], %[[RS]] :
// CHECK:         %[[DQ:.*]] = linalg.batch_matmul ins(%[[DS]], %arg1 :
// CHECK:         %[[DK:.*]] = linalg.batch_matmul indexing_maps = [#[[AT]], #[[B]], #[[C]]] ins(%[[DS]], %arg0 :
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]]
func.func @attention_grad(%q: tensor<2x4x3xf32>, %k: tensor<2x4x3xf32>, %v: tensor<2x4x3xf32>, %do: tensor<2x4x3xf32>) -> (tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>) {
  %dq, %dk, %dv = dsnn.attention_grad %q, %k, %v, %do {causal} : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>
  return %dq, %dk, %dv : tensor<2x4x3xf32>, tensor<2x4x3xf32>, tensor<2x4x3xf32>
}
