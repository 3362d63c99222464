// RUN: ds-opt %s --ds-internalize-functions | FileCheck %s

// A private function with a body is called only from this module: internal.
// CHECK: llvm.func internal @kernel_0(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64)
// CHECK-SAME: sym_visibility = "private"
llvm.func @kernel_0(%allocated: !llvm.ptr, %aligned: !llvm.ptr, %offset: i64)
    attributes {sym_visibility = "private"} {
  llvm.return
}

// A public function is what callers outside see: its linkage stays.
// CHECK: llvm.func @train_step(
llvm.func @train_step(%p: !llvm.ptr) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  llvm.call @kernel_0(%p, %p, %c0) : (!llvm.ptr, !llvm.ptr, i64) -> ()
  llvm.return
}

// A declaration is defined elsewhere (the runtime).
// CHECK: llvm.func @dsrt_check(i32, !llvm.ptr) -> i32
llvm.func @dsrt_check(i32, !llvm.ptr) -> i32 attributes {sym_visibility = "private"}

// A linkage set before is kept.
// CHECK: llvm.func weak @helper()
llvm.func weak @helper() attributes {sym_visibility = "private"} {
  llvm.return
}
