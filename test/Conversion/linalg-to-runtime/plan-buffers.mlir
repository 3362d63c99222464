// RUN: ds-opt %s --ds-plan-buffers --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-plan-buffers='reuse=0' --split-input-file | FileCheck %s --check-prefix=NOREUSE
// RUN: ds-opt %s --ds-plan-buffers='report=1' --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// Two temporaries whose lives do not overlap share offset 0; the dealloc
// goes away with the allocation.
// CHECK-LABEL: memref.global "private" @__ds_arena_chain : memref<256xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func @chain
// CHECK-SAME:    ds.workspace_bytes = 256 : i64, ds.workspace_unplanned_bytes = 512 : i64
// CHECK:         %[[ARENA:.*]] = memref.get_global @__ds_arena_chain : memref<256xi8>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[T0:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<256xi8> to memref<64xf32>
// CHECK:         %[[C0B:.*]] = arith.constant 0 : index
// CHECK:         %[[T1:.*]] = memref.view %[[ARENA]][%[[C0B]]][] : memref<256xi8> to memref<64xf32>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// NOREUSE-LABEL: memref.global "private" @__ds_arena_chain : memref<512xi8>
// NOREUSE:       arith.constant 256 : index
// REPORT: remark: ds-plan-buffers: @chain: 2 buffer(s) in a 256-byte arena (512 bytes without reuse, 256 live at most at once)
func.func @chain(%x: memref<64xf32>, %y: memref<64xf32>) {
  %t0 = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%t0 : memref<64xf32>)
  linalg.copy ins(%t0 : memref<64xf32>) outs(%y : memref<64xf32>)
  memref.dealloc %t0 : memref<64xf32>
  %t1 = memref.alloc() : memref<64xf32>
  linalg.copy ins(%y : memref<64xf32>) outs(%t1 : memref<64xf32>)
  linalg.copy ins(%t1 : memref<64xf32>) outs(%x : memref<64xf32>)
  return
}

// -----

// Overlapping lives (a view of %t0 is read after %t1 is written) get
// disjoint bytes, largest first.
// CHECK-LABEL: func @overlap
// CHECK-DAG:     arith.constant 0 : index
// CHECK-DAG:     arith.constant 512 : index
// CHECK-NOT:     memref.alloc
func.func @overlap(%x: memref<128xf32>, %y: memref<2x32xf32>) {
  %t0 = memref.alloc() : memref<128xf32>
  linalg.copy ins(%x : memref<128xf32>) outs(%t0 : memref<128xf32>)
  %v = memref.subview %t0[0] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1]>>
  %e = memref.expand_shape %v [[0, 1]] output_shape [2, 32] : memref<64xf32, strided<[1]>> into memref<2x32xf32>
  %t1 = memref.alloc() : memref<2x32xf32>
  linalg.copy ins(%y : memref<2x32xf32>) outs(%t1 : memref<2x32xf32>)
  linalg.add ins(%e, %t1 : memref<2x32xf32>, memref<2x32xf32>) outs(%y : memref<2x32xf32>)
  return
}

// -----

// A returned buffer escapes: it stays a heap allocation (no arena at all).
// CHECK-LABEL: func @escapes
// CHECK-NOT:     memref.get_global
// CHECK:         memref.alloc() : memref<16xf32>
// REPORT-NOT: @escapes
func.func @escapes(%x: memref<16xf32>) -> memref<16xf32> {
  %t = memref.alloc() : memref<16xf32>
  linalg.copy ins(%x : memref<16xf32>) outs(%t : memref<16xf32>)
  return %t : memref<16xf32>
}

// -----

// Dynamic sizes are left to the allocator; a loop body's temporaries are
// planned (plan-buffers-loops.mlir has the loop cases).
// CHECK-LABEL: func @dynamic_and_nested
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         scf.for
// CHECK-NOT:       memref.alloc
// CHECK:           memref.view %{{.*}} : memref<64xi8> to memref<4xf32>
// CHECK-NOT:       memref.dealloc %{{.*}} : memref<4xf32>
func.func @dynamic_and_nested(%n: index, %x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<4xf32>
    linalg.copy ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
    memref.dealloc %t : memref<4xf32>
  }
  memref.dealloc %d : memref<?xf32>
  return
}

// -----

// A private function's result made in a buffer of its own and copied into
// its out-param at the end (what bufferization leaves of a result a loop
// makes) is made in the out-param: the caller passes a buffer it allocated,
// once. Where a caller passes its own argument, which may alias an input
// (train_step's out-params are its arguments), the copy stays.
// CHECK-LABEL: func private @scatter
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.view
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[OUT:arg1]] : memref<1024xf32>)
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT:     memref.copy
// CHECK:         return
// REPORT-NOT: @scatter
func.func private @scatter(%x: memref<16xf32>, %out: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1024xf32>)
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    memref.store %v, %t[%i] : memref<1024xf32>
  }
  memref.copy %t, %out : memref<1024xf32> to memref<1024xf32>
  return
}
// CHECK-LABEL: func private @scatter_kept
// CHECK:         memref.view
// CHECK:         memref.copy
// REPORT: remark: ds-plan-buffers: @scatter_kept: 1 buffer(s) in a 4096-byte arena
func.func private @scatter_kept(%x: memref<16xf32>, %out: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1024xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1024xf32>)
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    memref.store %v, %t[%i] : memref<1024xf32>
  }
  memref.copy %t, %out : memref<1024xf32> to memref<1024xf32>
  return
}
func.func @callers(%x: memref<16xf32>, %out: memref<1024xf32>) {
  %g = memref.alloc() : memref<1024xf32>
  call @scatter(%x, %g) : (memref<16xf32>, memref<1024xf32>) -> ()
  call @scatter_kept(%x, %out) : (memref<16xf32>, memref<1024xf32>) -> ()
  memref.dealloc %g : memref<1024xf32>
  return
}

// -----

// A view of the buffer written after the copy: the out-param keeps the
// value at the copy, so the copy stays.
// CHECK-LABEL: func private @written_after
// CHECK:         %[[T:.*]] = memref.view
// CHECK:         memref.copy %[[T]], %arg1
// CHECK:         memref.store
func.func private @written_after(%x: memref<16xf32>, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<16xf32>
  %v = memref.subview %t[0] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1]>>
  memref.copy %x, %t : memref<16xf32> to memref<16xf32>
  memref.copy %t, %out : memref<16xf32> to memref<16xf32>
  memref.store %zero, %v[%c0] : memref<8xf32, strided<[1]>>
  return
}
func.func @calls_written_after(%x: memref<16xf32>) {
  %g = memref.alloc() : memref<16xf32>
  call @written_after(%x, %g) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.dealloc %g : memref<16xf32>
  return
}
