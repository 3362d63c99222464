// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-lower-nn-to-linalg | FileCheck %s --implicit-check-not="= dsnn." --implicit-check-not=dsnn.yield

// The whole example model lowers. Per block: the qkv projection, the two
// attention products, the output projection and the two MLP linears; then
// the LM head.
// CHECK-LABEL: func @forward
// CHECK-COUNT-1: linalg.matmul
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-COUNT-4: linalg.matmul
// CHECK-COUNT-2: linalg.batch_matmul
// CHECK-COUNT-4: linalg.matmul
// CHECK-NOT:     linalg.{{(batch_)?}}matmul
// CHECK:         return %{{.*}} : tensor<f32>
