// RUN: ds-opt %s --ds-fixed-order-reductions --split-input-file --verify-diagnostics | FileCheck %s
// RUN: ds-opt %s --ds-fixed-order-reductions='lanes=8' --split-input-file | FileCheck %s --check-prefix=LANES8

// A row sum of squares over 70 elements: 32 lanes in a stack buffer at
// the function entry, set to -0.0; the first 64 elements combined into lane
// i mod 32 in order; a halving tree over the lanes; the initial value; then
// elements 64..69 one at a time.
// CHECK-LABEL: func @sum_of_squares
// CHECK:         %[[LANES:.*]] = memref.alloca() : memref<32xf32>
// CHECK:         %[[INIT:[0-9]+]] = memref.load %arg1
// CHECK:         %[[NEG0:cst[_0-9]*]] = arith.constant -0.000000e+00 : f32
// CHECK:         scf.for %[[K0:arg[0-9]+]] =
// CHECK-NEXT:      memref.store %[[NEG0]], %[[LANES]][%[[K0]]]
// CHECK:         scf.for %[[J:arg[0-9]+]] = %c0 to %c64 step %c32 {
// CHECK-NEXT:      scf.for %[[K:arg[0-9]+]] = %{{.*}} to %c32 step %{{.*}} {
// CHECK-NEXT:        %[[I:[0-9]+]] = arith.addi %[[J]], %[[K]]
// CHECK-NEXT:        %[[ACC:[0-9]+]] = memref.load %[[LANES]][%[[K]]]
// CHECK-NEXT:        %[[X:[0-9]+]] = memref.load %arg0[%{{.*}}, %[[I]]]
// CHECK-NEXT:        %[[SQ:[0-9]+]] = arith.mulf %[[X]], %[[X]]
// CHECK-NEXT:        %[[S:[0-9]+]] = arith.addf %[[SQ]], %[[ACC]]
// CHECK-NEXT:        memref.store %[[S]], %[[LANES]][%[[K]]]
// CHECK:         %[[L0:[0-9]+]] = memref.load %[[LANES]][%c0
// CHECK:         %[[L16:[0-9]+]] = memref.load %[[LANES]][%c16
// CHECK:         %[[L31:[0-9]+]] = memref.load %[[LANES]][%c31
// CHECK-NEXT:    %[[T0:[0-9]+]] = arith.addf %[[L0]], %[[L16]]
// CHECK-COUNT-14: arith.addf
// CHECK-NEXT:    arith.addf %{{.*}}, %[[L31]]
// CHECK-NEXT:    arith.addf %[[T0]], %{{.*}}
// CHECK-COUNT-13: arith.addf
// CHECK-NEXT:    %[[TREE:[0-9]+]] = arith.addf
// CHECK-NEXT:    %[[START:[0-9]+]] = arith.addf %[[TREE]], %[[INIT]]
// CHECK:         %[[R:[0-9]+]] = scf.for %{{.*}} = %c64{{.*}} to %c70 step %c1 iter_args(%{{.*}} = %[[START]])
// CHECK:         memref.store %[[R]], %arg1
// LANES8-LABEL: func @sum_of_squares
// LANES8:         memref.alloca() : memref<8xf32>
// LANES8:         scf.for %{{.*}} = %c0 to %c64 step %c8
func.func @sum_of_squares(%in: memref<4x70xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c70 = arith.constant 70 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %init = memref.load %out[%i] : memref<4xf32>
    %r = scf.for %k = %c0 to %c70 step %c1 iter_args(%acc = %init) -> (f32) {
      %x = memref.load %in[%i, %k] : memref<4x70xf32>
      %sq = arith.mulf %x, %x : f32
      %s = arith.addf %sq, %acc : f32
      scf.yield %s : f32
    }
    memref.store %r, %out[%i] : memref<4xf32>
  }
  return
}

// -----

// A product: lanes start at 1.0. 20 iterations give 8 lanes (two rounds).
// CHECK-LABEL: func @product
// CHECK:         %[[LANES:.*]] = memref.alloca() : memref<8xf32>
// CHECK:         %[[ONE:cst[_0-9]*]] = arith.constant 1.000000e+00 : f32
// CHECK:         memref.store %[[ONE]], %[[LANES]]
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c8 {
// CHECK:           arith.mulf
// CHECK-COUNT-8: arith.mulf
// CHECK:         scf.for %{{.*}} = %c16{{.*}} to %c20 step %c1
func.func @product(%in: memref<20xf32>, %init: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %r = scf.for %k = %c0 to %c20 step %c1 iter_args(%acc = %init) -> (f32) {
    %x = memref.load %in[%k] : memref<20xf32>
    %p = arith.mulf %x, %acc : f32
    scf.yield %p : f32
  }
  return %r : f32
}

// -----

// Left in order: too short for two rounds of 8 lanes, the accumulator read
// by another op, a max (exact in any order: ds-relax-reductions' job), and
// dynamic bounds.
// CHECK-LABEL: func @left_alone
// CHECK-NOT:     memref.alloca
// CHECK:         return
func.func @left_alone(%in: memref<64xf32>, %n: index, %init: f32) -> (f32, f32, f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c15 = arith.constant 15 : index
  %c64 = arith.constant 64 : index
  %short = scf.for %k = %c0 to %c15 step %c1 iter_args(%acc = %init) -> (f32) {
    %x = memref.load %in[%k] : memref<64xf32>
    %s = arith.addf %x, %acc : f32
    scf.yield %s : f32
  }
  %reread = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %init) -> (f32) {
    %x = memref.load %in[%k] : memref<64xf32>
    %y = arith.mulf %x, %acc : f32
    %s = arith.addf %y, %acc : f32
    scf.yield %s : f32
  }
  %max = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %init) -> (f32) {
    %x = memref.load %in[%k] : memref<64xf32>
    %m = arith.maximumf %x, %acc : f32
    scf.yield %m : f32
  }
  %dyn = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (f32) {
    %x = memref.load %in[%k] : memref<64xf32>
    %s = arith.addf %x, %acc : f32
    scf.yield %s : f32
  }
  return %short, %reread, %max, %dyn : f32, f32, f32, f32
}
