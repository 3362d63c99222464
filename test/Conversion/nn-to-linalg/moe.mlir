// RUN: ds-opt %s --ds-lower-nn-to-linalg | FileCheck %s --implicit-check-not=dsnn.

// A dsnn.moe lowers through its routing (MoEOp::expand): the top-k choice
// as generics (ranks by counting, then the k best), the slots as one
// sequential scf.for over choices carrying per-expert counts, dispatch as an
// scf.for writing kept rows into their slots, the expert region inlined
// (batch matmuls), gather as a generic reading each kept choice's slot.
// CHECK-LABEL: func @moe
// Gate and top-k ranks: i64 counts over [N, E, E].
// CHECK:         linalg.matmul
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<16x4xi64>)
// CHECK:         linalg.generic {{.*}}outs(%{{.*}} : tensor<16x2xi64>)
// Slots: choice by choice, token by token.
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (tensor<4xi64>, tensor<16x2xi64>)
// CHECK:           arith.cmpi slt
// CHECK:           tensor.insert
// Dispatch: kept rows into their slots.
// CHECK:         scf.for {{.*}} -> (tensor<4x10x16xf32>)
// CHECK:           scf.if
// CHECK:             tensor.insert_slice {{.*}} into tensor<4x10x16xf32>
// Experts, then gather.
// CHECK:         linalg.batch_matmul
// CHECK:         linalg.generic {{.*}}outs(%{{.*}} : tensor<16x2x16xf32>)
// CHECK:           tensor.extract
func.func @moe(%x: tensor<16x16xf32>, %wg: tensor<4x16xf32>, %w1: tensor<4x16x16xf32>) -> (tensor<16x16xf32>, tensor<f32>) {
  %o, %a = dsnn.moe %x, %wg experts(%w1 : tensor<4x16x16xf32>)
      {num_experts = 4 : i64, k = 2 : i64, capacity_factor = 1.25 : f64}
      : tensor<16x16xf32>, tensor<4x16xf32> -> tensor<16x16xf32>, tensor<f32> {
    ^bb0(%tok: tensor<4x10x16xf32>, %a1: tensor<4x16x16xf32>):
      %h = dsnn.batch_matmul %tok, %a1 {transpose_b} : tensor<4x10x16xf32>, tensor<4x16x16xf32> -> tensor<4x10x16xf32>
      dsnn.yield %h : tensor<4x10x16xf32>
  }
  return %o, %a : tensor<16x16xf32>, tensor<f32>
}
