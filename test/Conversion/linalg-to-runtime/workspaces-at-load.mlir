// RUN: ds-opt %s --ds-workspaces-at-load --split-input-file | FileCheck %s

// Two arenas become two pointers into one allocation of 72 + 200 bytes: the
// second starts at the next multiple of its 64-byte alignment, 128.
// CHECK-LABEL: module @two_arenas
// CHECK-NOT:   !llvm.array
// CHECK:       llvm.mlir.global internal @__ds_arena_f() {{.*}}alignment = 8 : i64, ds.workspace_bytes = 72 : i64} : !llvm.ptr {
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    llvm.return %[[Z]]
// CHECK:       llvm.mlir.global internal @__ds_arena_g() {{.*}}ds.workspace_bytes = 200 : i64} : !llvm.ptr
// Every address of an arena is now the pointer's value.
// CHECK-LABEL: llvm.func @f(
// CHECK:         %[[SLOT:.*]] = llvm.mlir.addressof @__ds_arena_f : !llvm.ptr
// CHECK-NEXT:    %[[BASE:.*]] = llvm.load %[[SLOT]] {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.getelementptr %[[BASE]][0, 16]
// CHECK-LABEL: llvm.func @g(
// CHECK:         llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:       llvm.func @dsrt_workspace_alloc(i64) -> !llvm.ptr
// CHECK:       llvm.func @dsrt_workspace_free(!llvm.ptr, i64)
// One allocation for both; -1 when it fails.
// CHECK-LABEL: llvm.func @__ds_workspaces_init() -> i64
// CHECK-DAG:     %[[TOTAL:.*]] = llvm.mlir.constant(328 : i64) : i64
// CHECK:         %[[P:.*]] = llvm.call @dsrt_workspace_alloc(%[[TOTAL]])
// CHECK:         llvm.icmp "eq" %[[P]]
// CHECK:         llvm.mlir.constant(-1 : i64)
// CHECK:         llvm.store %[[P]], %{{.*}}
// CHECK:         %[[OFF:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK:         %[[G:.*]] = llvm.getelementptr %[[P]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         llvm.store %[[G]], %{{.*}}
// CHECK:         llvm.return %{{.*}} : i64
// CHECK-LABEL: llvm.func @__ds_workspaces_release()
// CHECK:         llvm.call @dsrt_workspace_free(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> ()
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
module @two_arenas {
  llvm.mlir.global private @__ds_arena_f() {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<72 x i8>
  llvm.mlir.global private @__ds_arena_g() {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<200 x i8>
  llvm.func @f() -> f32 {
    %a = llvm.mlir.addressof @__ds_arena_f : !llvm.ptr
    %p = llvm.getelementptr %a[0, 16] : (!llvm.ptr) -> !llvm.ptr, !llvm.array<72 x i8>
    %v = llvm.load %p : !llvm.ptr -> f32
    llvm.return %v : f32
  }
  llvm.func @g(%v: f32) {
    %a = llvm.mlir.addressof @__ds_arena_g : !llvm.ptr
    llvm.store %v, %a : f32, !llvm.ptr
    llvm.return
  }
}

// -----

// Without arenas nothing changes: no workspace entry points, other globals
// kept as they are.
// CHECK-LABEL: module @no_arena
// CHECK:       llvm.mlir.global private constant @table(dense<1.000000e+00> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
// CHECK-NOT:   __ds_workspaces
// CHECK-NOT:   dsrt_workspace
module @no_arena {
  llvm.mlir.global private constant @table(dense<1.0> : tensor<4xf32>) {addr_space = 0 : i32} : !llvm.array<4 x f32>
  llvm.func @f() {
    llvm.return
  }
}
