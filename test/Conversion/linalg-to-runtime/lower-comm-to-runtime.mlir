// RUN: ds-opt %s --ds-lower-comm-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// Blocking collectives: the group from the axes mask (dp is axis 1 of this
// grid: bit 1), the call on raw pointers, its status to dsrt_check.
// CHECK-LABEL: func.func @blocking
// CHECK: %[[MASK:.*]] = arith.constant 2 : i64
// CHECK: %[[G:.*]] = call @dsrt_comm_axes(%[[MASK]]) : (i64) -> !llvm.ptr
// CHECK: %[[N:.*]] = arith.constant 1024 : i64
// CHECK: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: %[[ST:.*]] = call @dsrt_all_gather(%[[G]], %{{.*}}, %{{.*}}, %[[N]], %[[F32]])
// CHECK: call @dsrt_check(%[[ST]], %{{.*}}) : (i32, !llvm.ptr) -> i32
// CHECK: call @dsrt_reduce_scatter(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[AVG:.*]]) :
// CHECK: %[[RANK:.*]] = call @dsrt_comm_rank(
// CHECK: "llvm.intr.memcpy"
// CHECK-NOT: dsdist.comm
module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 2>} {
  func.func @blocking(%s: memref<512xf32>, %w: memref<1024xf32>, %g: memref<512xf32>) {
    dsdist.comm all_gather %s into %w over ["dp"] : memref<512xf32>, memref<1024xf32>
    dsdist.comm reduce_scatter %w into %g over ["dp"] {kind = #dsdist<reduction avg>} : memref<1024xf32>, memref<512xf32>
    dsdist.comm shard %w into %s over ["dp"] : memref<1024xf32>, memref<512xf32>
    return
  }
}

// -----

// Point to point: the peer is this rank's coordinate on the axis plus the
// offset, modulo the axis size (a ring: (r + 1 + 2) mod 2); async forms keep the request in a stack slot at function entry,
// and the wait completes it.
// CHECK-LABEL: func.func @p2p
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: %[[PP:.*]] = arith.constant 1 : i64
// CHECK: %[[G:.*]] = call @dsrt_comm_axes(%[[PP]])
// CHECK: %[[R:.*]] = call @dsrt_comm_rank(%[[G]])
// CHECK: %[[THREE:.*]] = arith.constant 3 : i32
// CHECK: %[[SUM:.*]] = arith.addi %[[R]], %[[THREE]] : i32
// CHECK: %[[TWO:.*]] = arith.constant 2 : i32
// CHECK: %[[PEER:.*]] = arith.remsi %[[SUM]], %[[TWO]] : i32
// CHECK: call @dsrt_send(%[[G]], %{{.*}}, %{{.*}}, %{{.*}}, %[[PEER]], %{{.*}})
// CHECK: call @dsrt_recv_start({{.*}}, %[[SLOT]])
// CHECK: %[[REQ:.*]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[ST:.*]] = call @dsrt_wait(%[[REQ]]) : (!llvm.ptr) -> i32
// CHECK: call @dsrt_check(%[[ST]]
module attributes {dsdist.grid = #dsdist.grid<pp = 2, dp = 2>} {
  func.func @p2p(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
    dsdist.comm send %a into %a over ["pp"] {offset = 1 : i64} : memref<4x8xf32>, memref<4x8xf32>
    %h = dsdist.comm_start recv %b into %b over ["pp"] {offset = -1 : i64} : memref<4x8xf32>, memref<4x8xf32>
    dsdist.comm_wait %h, %b : memref<4x8xf32>
    return
  }
}

// -----

module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @bad_type(%a: memref<4xf64>) {
    // expected-error @+1 {{element type 'f64' has no runtime collective (f32, f16, bf16, i32, i64)}}
    dsdist.comm all_reduce %a into %a over ["dp"] {kind = #dsdist<reduction sum>} : memref<4xf64>, memref<4xf64>
    return
  }
}
