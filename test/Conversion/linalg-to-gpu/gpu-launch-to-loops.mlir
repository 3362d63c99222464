// RUN: ds-opt %s --ds-map-kernels-to-gpu --ds-gpu-launch-to-loops -split-input-file -verify-diagnostics | FileCheck %s

// An elementwise kernel: its body once per (block, thread), ids as loop
// indices, no launch left.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @scale
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK:         scf.for %[[B:.*]] = %[[C0]] to %[[C4]] step %[[C1]]
// CHECK:           scf.for %[[T:.*]] = %[[C0]] to %[[C256]] step %[[C1]]
// CHECK:             %[[M:.*]] = arith.muli %[[B]], %[[C256]]
// CHECK:             arith.addi %[[M]], %[[T]]
// CHECK:             scf.if
// CHECK:               memref.store
// CHECK-NOT:     gpu.
func.func @scale(%x: memref<8x100xf32>, %y: memref<8x100xf32>) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x100xf32>) outs(%y : memref<8x100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A row sum: per block (row), every thread's fold stored in a slot of its
// own, the slots paired at distance 1, 2, ..., 32 (64 threads), then the
// rest of the kernel per thread with the total: thread 0 adds it to the
// output.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum
// CHECK:         %[[SLOTS:.*]] = memref.alloca() : memref<64xf32>
// CHECK:         scf.for %[[B:.*]] =
// CHECK:           scf.for %[[T:.*]] =
// CHECK:             %[[P:.*]] = scf.for
// CHECK:             memref.store %[[P]], %[[SLOTS]][%[[T]]]
// CHECK:           scf.for {{.*}} step %c2
// CHECK:             arith.addf
// CHECK:           scf.for {{.*}} step %c4
// CHECK:           scf.for {{.*}} step %c8
// CHECK:           scf.for {{.*}} step %c16
// CHECK:           scf.for {{.*}} step %c32
// CHECK:           scf.for {{.*}} step %c64
// CHECK:           %[[TOTAL:.*]] = memref.load %[[SLOTS]][%c0{{[_0-9]*}}]
// CHECK:           scf.for %[[T2:.*]] =
// CHECK-NOT:         scf.for
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq, %[[T2]]
// CHECK:             scf.if %[[FIRST]]
// CHECK:               %[[OLD:.*]] = memref.load %arg1
// CHECK:               %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK:               memref.store %[[NEW]], %arg1
// CHECK-NOT:     gpu.
func.func @row_sum(%x: memref<8x64xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x64xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// Launches of other forms are refused, not emulated wrongly.
func.func @two_dimensional(%y: memref<4x4xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{only synchronous one-dimensional launches run as loops}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c4, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    memref.store %f, %y[%by, %tx] : memref<4x4xf32>
    gpu.terminator
  }
  return
}
