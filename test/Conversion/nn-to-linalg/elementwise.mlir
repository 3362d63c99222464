// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file | FileCheck %s --implicit-check-not="= dsnn."

// Broadcasting lives in the indexing maps: a missing leading dim is dropped,
// a size-1 dim reads index 0. Nothing is materialized.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func @add_broadcast
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<2x3x8xf32>
// CHECK:         linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0, %arg1 : tensor<2x1x8xf32>, tensor<3x1xf32>) outs(%[[E]] : tensor<2x3x8xf32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
func.func @add_broadcast(%a: tensor<2x1x8xf32>, %b: tensor<3x1xf32>) -> tensor<2x3x8xf32> {
  %y = dsnn.add %a, %b : tensor<2x1x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// CHECK-LABEL: func @arith
// CHECK:         arith.subf
// CHECK:         arith.mulf
// CHECK:         arith.divf
// CHECK:         arith.negf
// CHECK:         math.exp
// CHECK:         math.tanh
// CHECK:         arith.maximumf
// CHECK:         math.rsqrt
func.func @arith(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.sub %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %1 = dsnn.mul %0, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %2 = dsnn.div %1, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = dsnn.neg %2 : tensor<4xf32>
  %4 = dsnn.exp %3 : tensor<4xf32>
  %5 = dsnn.tanh %4 : tensor<4xf32>
  %6 = dsnn.relu %5 : tensor<4xf32>
  %7 = dsnn.rsqrt %6 : tensor<4xf32>
  return %7 : tensor<4xf32>
}

// -----

// Exact GELU is x·½(1 + erf(x/√2)); the tanh form uses math.tanh.
// CHECK-LABEL: func @gelu
// CHECK:         linalg.generic
// CHECK:           math.erf
// CHECK:         linalg.generic
// CHECK-NOT:       math.erf
// CHECK:           math.tanh
func.func @gelu(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = dsnn.gelu %x : tensor<8xf32>
  %1 = dsnn.gelu %x approximate tanh : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func @silu
// CHECK:         arith.negf
// CHECK:         math.exp
// CHECK:         arith.divf
// CHECK:         arith.mulf
func.func @silu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = dsnn.silu %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Narrow floats compute in f32 and round on the store.
// CHECK-LABEL: func @bf16_computes_in_f32
// CHECK:         ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-DAG:       %[[WA:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG:       %[[WB:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK:           %[[S:.*]] = arith.addf %[[WA]], %[[WB]] : f32
// CHECK:           %[[R:.*]] = arith.truncf %[[S]] : f32 to bf16
// CHECK:           linalg.yield %[[R]] : bf16
func.func @bf16_computes_in_f32(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = dsnn.add %a, %b : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: func @cast
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:         arith.truncf %{{.*}} : f32 to f16
func.func @cast(%a: tensor<4xbf16>) -> tensor<4xf16> {
  %0 = dsnn.cast %a : tensor<4xbf16> -> tensor<4xf32>
  %1 = dsnn.cast %0 : tensor<4xf32> -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func @activation_grads
// CHECK:         linalg.generic
// CHECK:           math.erf
// CHECK:           math.exp
// CHECK:         linalg.generic
// CHECK:           math.tanh
// CHECK:         linalg.generic
// CHECK:           arith.cmpf ogt
// CHECK:           arith.select
// CHECK:         linalg.generic
// CHECK:           math.exp
func.func @activation_grads(%x: tensor<8xf32>, %dy: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = dsnn.gelu_grad %x, %dy : tensor<8xf32>
  %1 = dsnn.gelu_grad %x, %dy approximate tanh : tensor<8xf32>
  %2 = dsnn.relu_grad %x, %dy : tensor<8xf32>
  %3 = dsnn.silu_grad %x, %dy : tensor<8xf32>
  return %0, %1, %2, %3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
