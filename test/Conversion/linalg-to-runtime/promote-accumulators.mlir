// RUN: ds-opt %s --ds-promote-accumulators --split-input-file | FileCheck %s

// A row sum as linalg-to-loops leaves it: the accumulator moves into
// iter_args, loaded once before and stored once after the loop.
// CHECK-LABEL: func @row_sum
// CHECK:         scf.for %[[I:.*]] =
// CHECK:           %[[INIT:.*]] = memref.load %arg1[%[[I]]]
// CHECK:           %[[R:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK:             %[[X:.*]] = memref.load %arg0
// CHECK:             %[[S:.*]] = arith.addf %[[X]], %[[ACC]]
// CHECK:             scf.yield %[[S]]
// CHECK:           memref.store %[[R]], %arg1[%[[I]]]
func.func @row_sum(%in: memref<4x8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %out[%i] : memref<4xf32>
      %x = memref.load %in[%i, %k] : memref<4x8xf32>
      %s = arith.addf %x, %a : f32
      memref.store %s, %out[%i] : memref<4xf32>
    }
  }
  return
}

// -----

// The loop also reads the accumulator's memref elsewhere: left alone.
// CHECK-LABEL: func @reads_other_element
// CHECK:         scf.for
// CHECK-NOT:       iter_args
// CHECK:           memref.store
func.func @reads_other_element(%out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %out[%c0] : memref<8xf32>
    %x = memref.load %out[%k] : memref<8xf32>
    %s = arith.addf %x, %a : f32
    memref.store %s, %out[%c0] : memref<8xf32>
  }
  return
}

// -----

// The stored element depends on the loop variable: not an accumulator.
// CHECK-LABEL: func @not_invariant
// CHECK:         scf.for
// CHECK-NOT:       iter_args
func.func @not_invariant(%in: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %out[%k] : memref<8xf32>
    %x = memref.load %in[%k] : memref<8xf32>
    %s = arith.addf %x, %a : f32
    memref.store %s, %out[%k] : memref<8xf32>
  }
  return
}
