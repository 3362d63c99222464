// RUN: ds-opt %s --ds-inline-into-c-wrappers --split-input-file | FileCheck %s

// The body moves into the wrapper and the function goes; of the
// descriptor only the field the body reads is loaded, at its first use,
// after the call before it.
// CHECK-NOT:   llvm.func @step(
// CHECK-LABEL: llvm.func @_mlir_ciface_step(
// CHECK-SAME:    %[[D:.*]]: !llvm.ptr)
// CHECK-NEXT:    llvm.call @dsrt_other()
// CHECK-NEXT:    %[[A:.*]] = llvm.getelementptr inbounds %[[D]][0, 1]
// CHECK-NEXT:    %[[P:.*]] = llvm.load %[[A]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @dsrt_use(%[[P]])
// CHECK-NEXT:    llvm.return
llvm.func @dsrt_other()
llvm.func @dsrt_use(!llvm.ptr)
llvm.func @step(%allocated: !llvm.ptr, %aligned: !llvm.ptr, %offset: i64,
                %size: i64, %stride: i64) attributes {llvm.emit_c_interface} {
  llvm.call @dsrt_other() : () -> ()
  llvm.call @dsrt_use(%aligned) : (!llvm.ptr) -> ()
  llvm.return
}
llvm.func @_mlir_ciface_step(%d: !llvm.ptr) attributes {llvm.emit_c_interface} {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %2 = llvm.extractvalue %desc[2] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %3 = llvm.extractvalue %desc[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %4 = llvm.extractvalue %desc[4, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.call @step(%0, %1, %2, %3, %4) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.return
}

// -----

// The body rebuilds the descriptor from its fields (as FuncToLLVM's entry
// block does) and reads one back: the read is the field, loaded at the
// use; the rebuilt descriptor and the fields nothing reads go.
// CHECK-LABEL: llvm.func @_mlir_ciface_rebuilt(
// CHECK-SAME:    %[[D:.*]]: !llvm.ptr)
// CHECK-NEXT:    llvm.call @dsrt_other()
// CHECK-NEXT:    %[[A:.*]] = llvm.getelementptr inbounds %[[D]][0, 1]
// CHECK-NEXT:    %[[P:.*]] = llvm.load %[[A]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @dsrt_use(%[[P]])
// CHECK-NEXT:    llvm.return
llvm.func @dsrt_other()
llvm.func @dsrt_use(!llvm.ptr)
llvm.func @rebuilt(%allocated: !llvm.ptr, %aligned: !llvm.ptr, %offset: i64,
                   %size: i64, %stride: i64) attributes {llvm.emit_c_interface} {
  %0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %1 = llvm.insertvalue %allocated, %0[0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %2 = llvm.insertvalue %aligned, %1[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %3 = llvm.insertvalue %offset, %2[2] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %4 = llvm.insertvalue %size, %3[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %5 = llvm.insertvalue %stride, %4[4, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.call @dsrt_other() : () -> ()
  %p = llvm.extractvalue %5[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.call @dsrt_use(%p) : (!llvm.ptr) -> ()
  llvm.return
}
llvm.func @_mlir_ciface_rebuilt(%d: !llvm.ptr) attributes {llvm.emit_c_interface} {
  %desc = llvm.load %d : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %0 = llvm.extractvalue %desc[0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %1 = llvm.extractvalue %desc[1] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %2 = llvm.extractvalue %desc[2] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %3 = llvm.extractvalue %desc[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %4 = llvm.extractvalue %desc[4, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.call @rebuilt(%0, %1, %2, %3, %4) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
  llvm.return
}

// -----

// A read of an array of the descriptor (sizes), not of one inserted field,
// stays a read of the rebuilt descriptor.
// CHECK-LABEL: llvm.func @_mlir_ciface_sizes(
// CHECK:         llvm.insertvalue
// CHECK:         %[[S:.*]] = llvm.extractvalue %{{.*}}[3]
// CHECK-NEXT:    llvm.return %[[S]]
llvm.func @sizes(%size: i64) -> !llvm.array<1 x i64> attributes {llvm.emit_c_interface} {
  %0 = llvm.mlir.poison : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %1 = llvm.insertvalue %size, %0[3, 0] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %2 = llvm.extractvalue %1[3] : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  llvm.return %2 : !llvm.array<1 x i64>
}
llvm.func @_mlir_ciface_sizes(%size: i64) -> !llvm.array<1 x i64> attributes {llvm.emit_c_interface} {
  %0 = llvm.call @sizes(%size) : (i64) -> !llvm.array<1 x i64>
  llvm.return %0 : !llvm.array<1 x i64>
}

// -----

// A scalar result is the wrapper's result.
// CHECK-NOT:   llvm.func @loss(
// CHECK-LABEL: llvm.func @_mlir_ciface_loss(
// CHECK-SAME:    -> f32
// CHECK-NEXT:    %[[Y:.*]] = llvm.fmul
// CHECK-NEXT:    llvm.return %[[Y]] : f32
llvm.func @loss(%x: f32) -> f32 attributes {llvm.emit_c_interface} {
  %y = llvm.fmul %x, %x : f32
  llvm.return %y : f32
}
llvm.func @_mlir_ciface_loss(%x: f32) -> f32 attributes {llvm.emit_c_interface} {
  %y = llvm.call @loss(%x) : (f32) -> f32
  llvm.return %y : f32
}

// -----

// A function something else also calls keeps its body (and its wrapper its
// call): inlining would compile it twice.
// CHECK-LABEL: llvm.func @shared(
// CHECK-LABEL: llvm.func @_mlir_ciface_shared(
// CHECK-NEXT:    llvm.call @shared()
// CHECK-LABEL: llvm.func @caller(
// CHECK-NEXT:    llvm.call @shared()
llvm.func @shared() attributes {llvm.emit_c_interface} {
  llvm.return
}
llvm.func @_mlir_ciface_shared() attributes {llvm.emit_c_interface} {
  llvm.call @shared() : () -> ()
  llvm.return
}
llvm.func @caller() {
  llvm.call @shared() : () -> ()
  llvm.return
}
