// RUN: ds-opt %s -canonicalize -split-input-file | FileCheck %s

// A collective over a group of one rank is the identity.
module attributes {dsdist.grid = #dsdist.grid<pp = 1, dp = 1, ep = 2, tp = 1>} {
// CHECK-LABEL: func @single_rank_group
// CHECK-SAME:    (%[[X:.*]]: tensor<32x8xf32>)
// CHECK-NOT:     dsdist.
// CHECK:         return %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]], %[[X]]
func.func @single_rank_group(%x: tensor<32x8xf32>)
    -> (tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>,
        tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>,
        tensor<32x8xf32>) {
  %0 = dsdist.all_gather %x over ["dp"] dim 0 : tensor<32x8xf32> -> tensor<32x8xf32>
  %1 = dsdist.reduce_scatter sum %x over ["dp"] dim 1 : tensor<32x8xf32> -> tensor<32x8xf32>
  %2 = dsdist.reduce_scatter max %x over ["dp", "tp"] dim 0 : tensor<32x8xf32> -> tensor<32x8xf32>
  %3 = dsdist.all_reduce sum %x over ["dp"] : tensor<32x8xf32>
  %4 = dsdist.all_reduce avg %x over ["pp", "dp"] : tensor<32x8xf32>
  %5 = dsdist.all_reduce max %x over ["tp"] : tensor<32x8xf32>
  %6 = dsdist.all_reduce min %x over ["dp"] : tensor<32x8xf32>
  %7 = dsdist.broadcast %x over ["dp"] root 0 : tensor<32x8xf32>
  %8 = dsdist.all_to_all %x over ["dp"] split 0 concat 1 : tensor<32x8xf32> -> tensor<32x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>,
      tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>,
      tensor<32x8xf32>
}

// A group with two ranks communicates; the async form is never folded.
// CHECK-LABEL: func @two_rank_group
// CHECK:         dsdist.all_reduce sum %{{.*}} over ["ep"]
// CHECK:         dsdist.all_reduce_start sum %{{.*}} over ["dp"]
func.func @two_rank_group(%x: tensor<32x8xf32>) -> (tensor<32x8xf32>, !dsdist.handle<tensor<32x8xf32>>) {
  %0 = dsdist.all_reduce sum %x over ["ep"] : tensor<32x8xf32>
  %h = dsdist.all_reduce_start sum %x over ["dp"] : tensor<32x8xf32>
  return %0, %h : tensor<32x8xf32>, !dsdist.handle<tensor<32x8xf32>>
}
}

// -----

// After a collective over group G every rank of G holds the same value: a
// max, min, average or broadcast over a subgroup of G changes nothing, a sum
// multiplies it and stays.
module attributes {dsdist.grid = #dsdist.grid<dp = 4, ep = 2>} {
// CHECK-LABEL: func @replicated
// CHECK:         %[[R:.*]] = dsdist.all_reduce sum %{{.*}} over ["dp", "ep"]
// CHECK:         %[[G:.*]] = dsdist.all_gather %{{.*}} over ["dp"] dim 0
// CHECK:         %[[S:.*]] = dsdist.all_reduce sum %[[R]] over ["dp"]
// CHECK:         %[[W:.*]] = dsdist.all_reduce max %[[G]] over ["dp", "ep"]
// CHECK:         return %[[R]], %[[R]], %[[G]], %[[S]], %[[W]]
func.func @replicated(%x: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<32xf32>, tensor<8xf32>, tensor<32xf32>) {
  %r = dsdist.all_reduce sum %x over ["dp", "ep"] : tensor<8xf32>
  %avg = dsdist.all_reduce avg %r over ["dp"] : tensor<8xf32>
  %max = dsdist.all_reduce max %avg over ["ep", "dp"] : tensor<8xf32>
  %g = dsdist.all_gather %x over ["dp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  %b = dsdist.broadcast %g over ["dp"] root 2 : tensor<32xf32>
  %sum = dsdist.all_reduce sum %r over ["dp"] : tensor<8xf32>
  %wider = dsdist.all_reduce max %b over ["dp", "ep"] : tensor<32xf32>
  return %max, %r, %b, %sum, %wider : tensor<8xf32>, tensor<8xf32>, tensor<32xf32>, tensor<8xf32>, tensor<32xf32>
}
}
