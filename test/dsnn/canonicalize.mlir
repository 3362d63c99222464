// RUN: ds-opt %s --canonicalize --split-input-file | FileCheck %s

// Folders: identity ops disappear, chains of reshapes and transposes compose.

// CHECK-LABEL: func @dropout_zero
// CHECK-NEXT: return %arg0
func.func @dropout_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.dropout %x p 0.0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func @dropout_nonzero_kept
// CHECK: dsnn.dropout
func.func @dropout_nonzero_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.dropout %x p 0.5 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func @reshape_chain
// CHECK-NEXT: %[[R:.*]] = dsnn.reshape %arg0 : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = dsnn.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = dsnn.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  return %1 : tensor<24xf32>
}

// CHECK-LABEL: func @reshape_roundtrip
// CHECK-NEXT: return %arg0
func.func @reshape_roundtrip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = dsnn.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = dsnn.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// CHECK-LABEL: func @transpose_identity
// CHECK-NEXT: return %arg0
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = dsnn.transpose %x perm [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func @transpose_inverse
// CHECK-NEXT: return %arg0
func.func @transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = dsnn.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = dsnn.transpose %0 perm [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// result dim i of the pair is x dim inner[outer[i]]: inner [1, 2, 0], outer
// [1, 0, 2] -> [2, 1, 0].
// CHECK-LABEL: func @transpose_compose
// CHECK-NEXT: %[[T:.*]] = dsnn.transpose %arg0 perm [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_compose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = dsnn.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = dsnn.transpose %0 perm [1, 0, 2] : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// CHECK-LABEL: func @single_split_concat_cast
// CHECK-NEXT: return %arg0
func.func @single_split_concat_cast(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = dsnn.split %x dim 1 : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = dsnn.concat %0 dim 0 : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = dsnn.cast %1 : tensor<2x3xf32> -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// CHECK-LABEL: func @dead_pure_ops_removed
// CHECK-NEXT: return
func.func @dead_pure_ops_removed(%x: tensor<2x3xf32>) {
  %0 = dsnn.gelu %x : tensor<2x3xf32>
  return
}
