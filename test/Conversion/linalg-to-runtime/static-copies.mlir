// RUN: ds-opt %s --ds-static-copies | FileCheck %s
// RUN: ds-opt %s --ds-static-copies --finalize-memref-to-llvm --convert-arith-to-llvm --convert-func-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// Shape and offset fixed by the type: the aligned pointers and a constant
// byte count (4 x 8 x 4 bytes), no descriptor field read.
// CHECK-LABEL: func @static
// CHECK-SAME:    (%[[B:[^:]*]]: memref<4x8xf32>)
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         %[[SA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:         %[[PA:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK:         %[[SB:.*]] = memref.extract_aligned_pointer_as_index %[[B]]
// CHECK:         %[[PB:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// CHECK:         %[[N:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-NOT:     llvm.select
// CHECK:         "llvm.intr.memcpy"(%[[PB]], %[[PA]], %[[N]]) <{isVolatile = false}>
// CHECK-NOT:     memref.copy
// LLVM-LABEL: llvm.func @static
// LLVM:         llvm.mlir.constant(128 : i64)
// LLVM-NOT:     llvm.mul
// LLVM:         "llvm.intr.memcpy"
func.func @static(%b: memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  memref.dealloc %a : memref<4x8xf32>
  return
}

// Two arguments may be one buffer (a state updated in place): then no
// byte is copied.
// CHECK-LABEL: func @arguments
// CHECK:         %[[N:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK:         %[[SAME:.*]] = llvm.icmp "eq" %[[PA:[^,]*]], %[[PB:[^ ]*]] : !llvm.ptr
// CHECK:         %[[Z:.*]] = llvm.mlir.constant(0 : i64) : i64
// CHECK:         %[[SIZE:.*]] = llvm.select %[[SAME]], %[[Z]], %[[N]]
// CHECK:         "llvm.intr.memcpy"(%[[PB]], %[[PA]], %[[SIZE]])
func.func @arguments(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}

// 16-bit and 64-bit elements: their own widths.
// CHECK-LABEL: func @widths
// CHECK:         llvm.mlir.constant(6 : i64)
// CHECK:         llvm.mlir.constant(8 : i64)
func.func @widths(%a: memref<3xbf16>, %b: memref<3xbf16>, %c: memref<i64>, %d: memref<i64>) {
  memref.copy %a, %b : memref<3xbf16> to memref<3xbf16>
  memref.copy %c, %d : memref<i64> to memref<i64>
  return
}

// What the type does not fix keeps the upstream lowering: a dynamic size,
// a strided layout (a subview), sub-byte elements, two different types.
// CHECK-LABEL: func @kept
// CHECK-NOT:     llvm.intr.memcpy
// CHECK-COUNT-4: memref.copy
func.func @kept(%a: memref<?xf32>, %b: memref<?xf32>,
                %c: memref<4xf32, strided<[2]>>, %d: memref<4xf32, strided<[2]>>,
                %e: memref<8xi1>, %f: memref<8xi1>,
                %g: memref<4xf32>, %h: memref<4xf32, strided<[1], offset: ?>>) {
  memref.copy %a, %b : memref<?xf32> to memref<?xf32>
  memref.copy %c, %d : memref<4xf32, strided<[2]>> to memref<4xf32, strided<[2]>>
  memref.copy %e, %f : memref<8xi1> to memref<8xi1>
  memref.copy %g, %h : memref<4xf32> to memref<4xf32, strided<[1], offset: ?>>
  return
}
