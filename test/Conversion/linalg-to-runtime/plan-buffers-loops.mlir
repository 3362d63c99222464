// RUN: ds-opt %s --ds-plan-buffers --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-plan-buffers='report=1' --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// Temporaries of a loop body live within one iteration: they share bytes
// with each other by liveness in the body, but not with a buffer used
// across the loop (%acc, live from before the loop to after it).
// CHECK-LABEL: memref.global "private" @__ds_arena_body_temporaries : memref<512xi8>
// CHECK-LABEL: func @body_temporaries
// CHECK-SAME:    ds.workspace_bytes = 512 : i64, ds.workspace_unplanned_bytes = 768 : i64
// CHECK:         %[[ARENA:.*]] = memref.get_global @__ds_arena_body_temporaries
// CHECK:         %[[ACC:.*]] = memref.view %[[ARENA]][%{{.*}}][] : memref<512xi8> to memref<64xf32>
// CHECK:         scf.for
// CHECK-NOT:       memref.alloc
// CHECK:           %[[C256:.*]] = arith.constant 256 : index
// CHECK:           memref.view %[[ARENA]][%[[C256]]][] : memref<512xi8> to memref<64xf32>
// CHECK-NOT:       memref.alloc
// CHECK:           %[[C256B:.*]] = arith.constant 256 : index
// CHECK:           memref.view %[[ARENA]][%[[C256B]]][] : memref<512xi8> to memref<64xf32>
// CHECK-NOT:       memref.alloc
// CHECK-NOT:       memref.dealloc
// CHECK:         }
// CHECK:         linalg.copy ins(%[[ACC]] : memref<64xf32>)
// REPORT: remark: ds-plan-buffers: @body_temporaries: 3 buffer(s) in a 512-byte arena (768 bytes without reuse, 512 live at most at once){{$}}
func.func @body_temporaries(%n: index, %x: memref<64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %acc = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%acc : memref<64xf32>)
  scf.for %i = %c0 to %n step %c1 {
    %t0 = memref.alloc() : memref<64xf32>
    linalg.copy ins(%acc : memref<64xf32>) outs(%t0 : memref<64xf32>)
    linalg.copy ins(%t0 : memref<64xf32>) outs(%y : memref<64xf32>)
    memref.dealloc %t0 : memref<64xf32>
    %t1 = memref.alloc() : memref<64xf32>
    linalg.copy ins(%y : memref<64xf32>) outs(%t1 : memref<64xf32>)
    linalg.add ins(%t1, %acc : memref<64xf32>, memref<64xf32>) outs(%acc : memref<64xf32>)
  }
  linalg.copy ins(%acc : memref<64xf32>) outs(%y : memref<64xf32>)
  return
}

// -----

// An accumulator as bufferized with allowReturnAllocsFromLoops: each
// iteration writes acc + g into a fresh buffer and yields it. The fresh
// buffer gets two slots, picked by the parity of the iteration number, so
// iteration k never overwrites iteration k-1's value while reading it; both
// slots and the initial value live from the loop to the last use of its
// result, so the body's temporary %g goes elsewhere.
// CHECK-LABEL: func @accumulator
// CHECK-SAME:    ds.workspace_bytes = 1024 : i64, ds.workspace_unplanned_bytes = 1024 : i64
// CHECK:         %[[ARENA:.*]] = memref.get_global @__ds_arena_accumulator
// CHECK:         %[[INIT:.*]] = memref.view %[[ARENA]]
// CHECK:         %[[R:.*]] = scf.for %[[I:.*]] = %[[LB:.*]] to %{{.*}} step %[[STEP:.*]] iter_args(%[[ACC:.*]] = %[[INIT]])
// CHECK:           %[[D:.*]] = arith.subi %[[I]], %[[LB]] : index
// CHECK:           %[[K:.*]] = arith.divui %[[D]], %[[STEP]] : index
// CHECK:           %[[BIT:.*]] = arith.andi %[[K]], %{{.*}} : index
// CHECK:           %[[EVEN:.*]] = arith.cmpi eq, %[[BIT]], %{{.*}} : index
// CHECK-NOT:       memref.alloc
// CHECK:           %[[OFF:.*]] = arith.select %[[EVEN]], %{{.*}}, %{{.*}} : index
// CHECK:           %[[NEW:.*]] = memref.view %[[ARENA]][%[[OFF]]][] : memref<1024xi8> to memref<64xf32>
// CHECK-NOT:       memref.alloc
// CHECK:           linalg.add ins(%[[ACC]], %{{.*}} : memref<64xf32>, memref<64xf32>) outs(%[[NEW]] : memref<64xf32>)
// CHECK:           scf.yield %[[NEW]]
// CHECK:         linalg.copy ins(%[[R]] : memref<64xf32>)
// REPORT: remark: ds-plan-buffers: @accumulator: 3 buffer(s) in a 1024-byte arena (1024 bytes without reuse, 1024 live at most at once); 1 carried across loop iterations in two slots each
func.func @accumulator(%lb: index, %n: index, %step: index, %x: memref<64xf32>, %y: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %init = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%init : memref<64xf32>)
  %r = scf.for %i = %lb to %n step %step iter_args(%acc = %init) -> (memref<64xf32>) {
    %g = memref.alloc() : memref<64xf32>
    linalg.copy ins(%x : memref<64xf32>) outs(%g : memref<64xf32>)
    %new = memref.alloc() : memref<64xf32>
    linalg.add ins(%acc, %g : memref<64xf32>, memref<64xf32>) outs(%new : memref<64xf32>)
    scf.yield %new : memref<64xf32>
  }
  linalg.copy ins(%r : memref<64xf32>) outs(%y : memref<64xf32>)
  return
}

// -----

// The micro-batch loop inside an outer loop, its result consumed in the
// outer body: every allocation is planned, the inner accumulator keyed on
// the inner loop's parity.
// CHECK-LABEL: func @nested
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for
// CHECK-NOT:       memref.alloc
// CHECK:           scf.for
// CHECK-NOT:         memref.alloc
// CHECK:             arith.select
// CHECK-NOT:         memref.alloc
// CHECK:             scf.yield
// CHECK-NOT:       memref.alloc
// CHECK:         return
func.func @nested(%n: index, %x: memref<64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %s = %c0 to %n step %c1 {
    %init = memref.alloc() : memref<64xf32>
    linalg.fill ins(%zero : f32) outs(%init : memref<64xf32>)
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<64xf32>) {
      %new = memref.alloc() : memref<64xf32>
      linalg.add ins(%acc, %x : memref<64xf32>, memref<64xf32>) outs(%new : memref<64xf32>)
      scf.yield %new : memref<64xf32>
    }
    %t = memref.alloc() : memref<64xf32>
    linalg.add ins(%r, %y : memref<64xf32>, memref<64xf32>) outs(%t : memref<64xf32>)
    linalg.copy ins(%t : memref<64xf32>) outs(%y : memref<64xf32>)
  }
  return
}

// -----

// Two slots are not enough when the previous value is carried on again
// (here: swapped into the other iteration argument, so iteration k still
// reads iteration k-2's buffer): the fresh buffer stays on the heap.
// CHECK-LABEL: func @carried_twice
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<64xf32>
// REPORT-NOT: @carried_twice
func.func @carried_twice(%n: index, %a: memref<64xf32>, %b: memref<64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%p = %a, %q = %b) -> (memref<64xf32>, memref<64xf32>) {
    %new = memref.alloc() : memref<64xf32>
    linalg.add ins(%p, %q : memref<64xf32>, memref<64xf32>) outs(%new : memref<64xf32>)
    scf.yield %new, %p : memref<64xf32>, memref<64xf32>
  }
  linalg.copy ins(%r#1 : memref<64xf32>) outs(%y : memref<64xf32>)
  return
}

// -----

// A loop result that leaves the function (or is carried by an outer loop)
// ends planning for what it may be: the initial value and the yielded
// buffer stay on the heap.
// CHECK-LABEL: func @result_escapes
// CHECK-NOT:     memref.get_global
// CHECK:         memref.alloc() : memref<64xf32>
// CHECK:         scf.for
// CHECK:           memref.alloc() : memref<64xf32>
// REPORT-NOT: @result_escapes
func.func @result_escapes(%n: index, %x: memref<64xf32>) -> memref<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %init = memref.alloc() : memref<64xf32>
  linalg.copy ins(%x : memref<64xf32>) outs(%init : memref<64xf32>)
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<64xf32>) {
    %new = memref.alloc() : memref<64xf32>
    linalg.add ins(%acc, %x : memref<64xf32>, memref<64xf32>) outs(%new : memref<64xf32>)
    scf.yield %new : memref<64xf32>
  }
  return %r : memref<64xf32>
}

// -----

// Loops under anything but scf.for (here a parallel loop, whose iterations
// would share the arena) are not planned, nor dynamic sizes.
// CHECK-LABEL: func @parallel_and_dynamic
// CHECK:         memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.alloc() : memref<4xf32>
func.func @parallel_and_dynamic(%n: index, %x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<4xf32>
      linalg.copy ins(%x : memref<4xf32>) outs(%t : memref<4xf32>)
    }
  }
  memref.dealloc %d : memref<?xf32>
  return
}
