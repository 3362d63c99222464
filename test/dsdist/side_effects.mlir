// RUN: ds-opt %s -cse -canonicalize | FileCheck %s

// Synchronous collectives are Pure: every rank of the group runs the same
// program through the same passes, so identical collectives merge and unused
// ones disappear on all ranks alike. Point-to-point ops and the `*_start`
// forms are not: two receives deliver two different messages, and a started
// communication is a promise to the peer.

module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 4>} {
// CHECK-LABEL: func @pure_collectives
// CHECK:         %[[R:.*]] = dsdist.all_reduce
// CHECK-NOT:     dsdist.all_reduce
// CHECK-NOT:     dsdist.all_gather
// CHECK:         return %[[R]], %[[R]]
func.func @pure_collectives(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = dsdist.all_reduce sum %x over ["dp"] : tensor<8xf32>
  %1 = dsdist.all_reduce sum %x over ["dp"] : tensor<8xf32>
  %unused = dsdist.all_gather %x over ["dp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func @communication_stays
// CHECK-COUNT-2: dsdist.recv from "pp" offset -1
// CHECK:         dsdist.send_start
// CHECK:         dsdist.all_gather_start
func.func @communication_stays(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = dsdist.recv from "pp" offset -1 : tensor<8xf32>
  %1 = dsdist.recv from "pp" offset -1 : tensor<8xf32>
  %s = dsdist.send_start %x to "pp" offset 1 : tensor<8xf32>
  %g = dsdist.all_gather_start %x over ["dp"] dim 0 : tensor<8xf32> -> !dsdist.handle<tensor<32xf32>>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}
}
