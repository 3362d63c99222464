// RUN: ds-opt %s --ds-lower-nn-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// A layer's body is inlined; its results are the yielded values.
// CHECK-LABEL: func @layer_inlined
// CHECK-NOT:     dsnn.layer
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK:           math.exp
// CHECK-NOT:     dsnn.yield
// CHECK:         return %[[R]]
func.func @layer_inlined(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
    %e = dsnn.exp %x : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @dropout_p0
// CHECK-NEXT:    return %arg0
func.func @dropout_p0(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.dropout %x p 0.0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dropout_p(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{'dsnn.dropout' with p = 0.1 is not lowered yet: a random mask needs the step's RNG state; only p = 0 (folded to the identity) lowers}}
  %0 = dsnn.dropout %x p 0.1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @below {{'dsnn.exp' has a dynamic shape; ds-lower-nn-to-linalg lowers static shapes only}}
  %0 = dsnn.exp %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// The expert region is reported with the moe, not op by op.
func.func @moe(%x: tensor<16x16xf32>, %wg: tensor<4x16xf32>, %w1: tensor<4x64x16xf32>, %w2: tensor<4x16x64xf32>) -> tensor<16x16xf32> {
  // expected-error @below {{'dsnn.moe' is not lowered yet: ds-lower-nn-to-linalg has no lowering for the mixture-of-experts dispatch and expert region}}
  %o, %a = dsnn.moe %x, %wg experts(%w1, %w2 : tensor<4x64x16xf32>, tensor<4x16x64xf32>)
      {num_experts = 4 : i64, k = 2 : i64, capacity_factor = 1.25 : f64}
      : tensor<16x16xf32>, tensor<4x16xf32> -> tensor<16x16xf32>, tensor<f32> {
    ^bb0(%tok: tensor<4x10x16xf32>, %a1: tensor<4x64x16xf32>, %a2: tensor<4x16x64xf32>):
      %h = dsnn.batch_matmul %tok, %a1 {transpose_b} : tensor<4x10x16xf32>, tensor<4x64x16xf32> -> tensor<4x10x64xf32>
      %out = dsnn.batch_matmul %h, %a2 {transpose_b} : tensor<4x10x64xf32>, tensor<4x16x64xf32> -> tensor<4x10x16xf32>
      dsnn.yield %out : tensor<4x10x16xf32>
  }
  return %o : tensor<16x16xf32>
}
