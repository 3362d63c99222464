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

// Without a key, dropout is evaluation mode (torch's model.eval()).
// CHECK-LABEL: func @dropout_eval
// CHECK-NEXT:    return %arg0
func.func @dropout_eval(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.dropout %x p 0.1 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// With a key: the mask is hashed from (seed, stream, key, element index)
// inside one elementwise generic, then kept values are scaled by 1/(1-p).
// CHECK-LABEL: func @dropout_keyed
// CHECK:         %[[K:.*]] = tensor.extract %arg1[] : tensor<i64>
// CHECK:         arith.xori %[[K]]
// CHECK:         linalg.generic
// CHECK:           linalg.index 0
// CHECK:           linalg.index 1
// CHECK:           arith.cmpi uge
// CHECK:           arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK:           arith.select
// CHECK-NOT:     dsnn.dropout
func.func @dropout_keyed(%x: tensor<2x4xf32>, %key: tensor<i64>) -> tensor<2x4xf32> {
  %0 = dsnn.dropout %x key %key p 0.25 {seed = 1 : i64, stream = 2 : i64} : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @below {{'dsnn.exp' has a dynamic shape; ds-lower-nn-to-linalg lowers static shapes only}}
  %0 = dsnn.exp %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}
