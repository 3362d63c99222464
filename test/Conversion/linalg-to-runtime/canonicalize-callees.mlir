// RUN: ds-opt %s --ds-canonicalize-callees | FileCheck %s

// A layer or kernel function is canonicalized: the read of the rebuilt
// descriptor is its field, the duplicate constant one, dead code gone.
// CHECK-LABEL: llvm.func internal @kernel_0(
// CHECK-SAME:    %[[P:[^:]*]]: !llvm.ptr
// CHECK-NEXT:    %[[C:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    llvm.call @dsrt_use(%[[P]], %[[C]], %[[C]])
// CHECK-NEXT:    llvm.return
llvm.func @dsrt_use(!llvm.ptr, i64, i64)
llvm.func internal @kernel_0(%p: !llvm.ptr, %n: i64) {
  %0 = llvm.mlir.poison : !llvm.struct<(ptr, i64)>
  %1 = llvm.insertvalue %p, %0[0] : !llvm.struct<(ptr, i64)>
  %2 = llvm.insertvalue %n, %1[1] : !llvm.struct<(ptr, i64)>
  %3 = llvm.extractvalue %2[0] : !llvm.struct<(ptr, i64)>
  %a = llvm.mlir.constant(1 : i64) : i64
  %b = llvm.mlir.constant(1 : i64) : i64
  %dead = llvm.add %n, %a : i64
  llvm.call @dsrt_use(%3, %a, %b) : (!llvm.ptr, i64, i64) -> ()
  llvm.return
}

// The entry point's glue is left as it is.
// CHECK-LABEL: llvm.func @_mlir_ciface_step(
// CHECK-NEXT:    llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    llvm.call @kernel_0
llvm.func @_mlir_ciface_step(%p: !llvm.ptr) {
  %a = llvm.mlir.constant(1 : i64) : i64
  %b = llvm.mlir.constant(1 : i64) : i64
  llvm.call @kernel_0(%p, %a) : (!llvm.ptr, i64) -> ()
  llvm.call @dsrt_use(%p, %a, %b) : (!llvm.ptr, i64, i64) -> ()
  llvm.return
}
