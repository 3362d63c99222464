// RUN: ds-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A collective is verified against the grid of its nearest enclosing op that
// carries `dsdist.grid`, so a nested module (or a function) can override the
// grid of the module around it.

// CHECK-LABEL: func @outer
// CHECK:         dsdist.broadcast %{{.*}} over ["dp"] root 3
module attributes {dsdist.grid = #dsdist.grid<dp = 4>} {
  func.func @outer(%x: tensor<8xf32>) -> tensor<8xf32> {
    %0 = dsdist.broadcast %x over ["dp"] root 3 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
  // CHECK-LABEL: func @on_a_function
  // CHECK:         dsdist.all_reduce sum %{{.*}} over ["tp"]
  func.func @on_a_function(%x: tensor<8xf32>) -> tensor<8xf32>
      attributes {dsdist.grid = #dsdist.grid<dp = 2, tp = 2>} {
    %0 = dsdist.all_reduce sum %x over ["tp"] : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

module attributes {dsdist.grid = #dsdist.grid<dp = 4>} {
  module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
    func.func @inner(%x: tensor<8xf32>) -> tensor<8xf32> {
      // expected-error @+1 {{'dsdist.broadcast' op root 3 is out of range for the group ["dp"] of size 2}}
      %0 = dsdist.broadcast %x over ["dp"] root 3 : tensor<8xf32>
      return %0 : tensor<8xf32>
    }
  }
}
