// RUN: ds-opt %s --split-input-file --verify-diagnostics | ds-opt --split-input-file | FileCheck %s

// Round trip of the sharding attribute, dsdist.shard and the buffer-level
// forms bufferization produces.
// CHECK-LABEL: func.func @roundtrip
// CHECK-SAME: {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [4, 3]>}
// CHECK: dsdist.shard %{{.*}} over ["dp"] dim 0 : tensor<12xf32> -> tensor<6xf32>
// CHECK: dsdist.comm all_gather %{{.*}} into %{{.*}} over ["dp"] : memref<6xf32>, memref<12xf32>
// CHECK: %[[H:.*]] = dsdist.comm_start all_reduce %{{.*}} into %{{.*}} over ["dp"] {kind = #dsdist<reduction avg>}
// CHECK: dsdist.comm_wait %[[H]], %{{.*}} : memref<6xf32>
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @roundtrip(%m: tensor<6xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [4, 3]>},
                       %w: tensor<12xf32>, %a: memref<6xf32>, %b: memref<12xf32>) -> tensor<6xf32> {
    %s = dsdist.shard %w over ["dp"] dim 0 : tensor<12xf32> -> tensor<6xf32>
    dsdist.comm all_gather %a into %b over ["dp"] : memref<6xf32>, memref<12xf32>
    %h = dsdist.comm_start all_reduce %a into %a over ["dp"] {kind = #dsdist<reduction avg>} : memref<6xf32>, memref<6xf32>
    dsdist.comm_wait %h, %a : memref<6xf32>
    return %s : tensor<6xf32>
  }
}

// -----

module attributes {dsdist.grid = #dsdist.grid<dp = 4>} {
  func.func @uneven(%w: tensor<6xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{input dim 0 is 6, which the group ["dp"] of size 4 does not divide}}
    %s = dsdist.shard %w over ["dp"] dim 0 : tensor<6xf32> -> tensor<2xf32>
    return %s : tensor<2xf32>
  }
}

// -----

module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @nokind(%a: memref<6xf32>) {
    // expected-error @+1 {{all_reduce needs reduction `kind`}}
    dsdist.comm all_reduce %a into %a over ["dp"] : memref<6xf32>, memref<6xf32>
    return
  }
}

// -----

// expected-error @+1 {{unknown argument attribute 'dsdist.shards'; the dsdist dialect defines 'dsdist.sharding', 'dsdist.experts', 'dsdist.tensor_parallel', 'dsdist.pipe_input' and 'dsdist.pipe_grad' on arguments}}
func.func @typo(%m: tensor<6xf32> {dsdist.shards = 1 : i64}) {
  return
}
