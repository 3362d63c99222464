// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// Row sum -> mean; Σ (x − mean)² -> rsqrt(var + eps) with the biased
// variance (÷ C); then (x − mean)·rstd·w + b.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @layer_norm
// CHECK-DAG:     %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK-DAG:     %[[INVC:.*]] = arith.constant 0.166666672 : f32
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<2x3x6xf32>)
// CHECK:         %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x3xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[INVC]]
// CHECK:         %[[SQ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %[[MEAN]] :
// CHECK:           arith.subf
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[SQ]] : tensor<2x3xf32>)
// CHECK:           %[[VAR:.*]] = arith.mulf %{{.*}}, %[[INVC]]
// CHECK:           %[[VE:.*]] = arith.addf %[[VAR]], %[[EPS]]
// CHECK:           math.rsqrt %[[VE]]
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[CH]], #[[CH]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %[[MEAN]], %[[RSTD]], %arg1, %arg2 :
func.func @layer_norm(%x: tensor<2x3x6xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<2x3x6xf32> {
  %0 = dsnn.layer_norm %x, %w, %b eps 1.0e-05 : tensor<2x3x6xf32>, tensor<6xf32>, tensor<6xf32>
  return %0 : tensor<2x3x6xf32>
}

// -----

// CHECK-LABEL: func @rms_norm
// CHECK:         %[[SS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x8xf32>)
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[SS]] : tensor<4xf32>)
// CHECK:           math.rsqrt
// CHECK:         linalg.generic {{.*}} ins(%arg0, %[[R]], %arg1 :
func.func @rms_norm(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = dsnn.rms_norm %x, %w eps 1.0e-06 : tensor<4x8xf32>, tensor<8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Statistics recomputed; two row sums (g and g·x̂) feed dx; dweight and
// dbias reduce over every leading dim into [C].
// CHECK-DAG: #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func @layer_norm_grad
// CHECK:         math.rsqrt
// CHECK:         %[[SUMS:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg2, %arg1, %{{.*}}, %{{.*}} : {{.*}}) outs(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK:         %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %arg2, %arg1, %{{.*}}, %{{.*}}, %[[SUMS]]#0, %[[SUMS]]#1 :
// CHECK:         %[[DWB:.*]]:2 = linalg.generic {indexing_maps = [{{.*}}, #[[CH]], #[[CH]]], iterator_types = ["reduction", "reduction", "parallel"]} {{.*}} outs(%{{.*}}, %{{.*}} : tensor<6xf32>, tensor<6xf32>)
// CHECK:         return %[[DX]], %[[DWB]]#0, %[[DWB]]#1
func.func @layer_norm_grad(%x: tensor<2x3x6xf32>, %w: tensor<6xf32>, %dy: tensor<2x3x6xf32>) -> (tensor<2x3x6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %dx, %dw, %db = dsnn.layer_norm_grad %x, %w, %dy eps 1.0e-05 : tensor<2x3x6xf32>, tensor<6xf32>
  return %dx, %dw, %db : tensor<2x3x6xf32>, tensor<6xf32>, tensor<6xf32>
}

// -----

// CHECK-LABEL: func @rms_norm_grad
// CHECK:         math.rsqrt
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK:         %[[DX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK:         %[[DW:.*]] = linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]
// CHECK:         return %[[DX]], %[[DW]]
func.func @rms_norm_grad(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %dy: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %dx, %dw = dsnn.rms_norm_grad %x, %w, %dy eps 1.0e-06 : tensor<4x8xf32>, tensor<8xf32>
  return %dx, %dw : tensor<4x8xf32>, tensor<8xf32>
}
