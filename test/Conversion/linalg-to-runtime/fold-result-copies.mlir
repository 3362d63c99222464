// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-fold-result-copies))' --split-input-file | FileCheck %s

// A stage's forward returns what its layer wrote into a buffer it
// allocated: the layer writes the out-param itself, no copy, no buffer.
// CHECK-LABEL: func @stage_forward
// CHECK-SAME:    (%[[X:.*]]: memref<2x8xf32>, %[[OUT:.*]]: memref<2x8xf32>)
// CHECK-NOT:     memref.alloc
// CHECK:         call @layer(%[[X]], %[[OUT]])
// CHECK-NOT:     memref.copy
// CHECK:         return
func.func private @layer(%x: memref<2x8xf32>, %out: memref<2x8xf32>) {
  memref.copy %x, %out : memref<2x8xf32> to memref<2x8xf32>
  return
}
func.func @stage_forward(%x: memref<2x8xf32>, %out: memref<2x8xf32>) {
  %a = memref.alloc() : memref<2x8xf32>
  call @layer(%x, %a) : (memref<2x8xf32>, memref<2x8xf32>) -> ()
  memref.copy %a, %out : memref<2x8xf32> to memref<2x8xf32>
  return
}

// -----
// Kept: the buffer is read after the copy.
// CHECK-LABEL: func @read_after
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         memref.copy %[[A]], %{{.*}}
// CHECK:         memref.load %[[A]]
func.func @read_after(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %v = memref.load %a[%c0] : memref<4xf32>
  return %v : f32
}

// -----
// Kept: a view of the buffer is read after the copy.
// CHECK-LABEL: func @view_read_after
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         memref.copy %[[A]], %{{.*}}
func.func @view_read_after(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  %v2 = memref.expand_shape %a [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  %v = memref.load %v2[%c0, %c0] : memref<2x2xf32>
  return %v : f32
}

// -----
// Kept: the out-param is read before the copy (its contents are the
// caller's until then).
// CHECK-LABEL: func @out_read_before
// CHECK:         %[[A:.*]] = memref.alloc()
// CHECK:         memref.copy %[[A]], %[[OUT:.*]] :
func.func @out_read_before(%x: memref<4xf32>, %out: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %out[%c0] : memref<4xf32>
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32>
  return %v : f32
}

// -----
// Kept: the buffer's type differs from the out-param's (a strided view
// of the caller's).
// CHECK-LABEL: func @strided_out
// CHECK:         memref.alloc()
// CHECK:         memref.copy
func.func @strided_out(%x: memref<4xf32>, %out: memref<4xf32, strided<[2]>>) {
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  memref.copy %a, %out : memref<4xf32> to memref<4xf32, strided<[2]>>
  return
}
