// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-copy-repeated-results))' --split-input-file | FileCheck %s
// RUN: ds-opt %s --pass-pipeline='builtin.module(func.func(ds-copy-repeated-results),buffer-results-to-out-params{hoist-static-allocs=1 modify-public-functions=1})' --split-input-file | FileCheck %s --check-prefix=OUT

// One buffer returned twice: the second result is a copy.
// CHECK-LABEL: func @returned_twice
// CHECK:         %[[G:.*]] = memref.alloc() : memref<32xf32>
// CHECK:         %[[COPY:.*]] = memref.alloc() : memref<32xf32>
// CHECK-NEXT:    memref.copy %[[G]], %[[COPY]] : memref<32xf32> to memref<32xf32>
// CHECK-NEXT:    return %[[G]], %[[COPY]] : memref<32xf32>, memref<32xf32>
// Then each result has its own out-param: the first is written in place, the
// second receives the copy.
// OUT-LABEL: func @returned_twice
// OUT-SAME:    (%{{.*}}: memref<32xf32>, %[[OUT0:.*]]: memref<32xf32>, %[[OUT1:.*]]: memref<32xf32>)
// OUT:         linalg.fill ins(%{{.*}} : f32) outs(%[[OUT0]] : memref<32xf32>)
// OUT-NEXT:    memref.copy %[[OUT0]], %[[OUT1]]
// OUT-NEXT:    return
func.func @returned_twice(%x: memref<32xf32>) -> (memref<32xf32>, memref<32xf32>) {
  %g = memref.alloc() : memref<32xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%g : memref<32xf32>)
  return %g, %g : memref<32xf32>, memref<32xf32>
}

// -----
// A dynamic size is read from the repeated buffer; each repeat after the
// first gets its own copy.
// CHECK-LABEL: func @dynamic_three_times
// CHECK-SAME:    (%[[X:.*]]: memref<?xf32>)
// CHECK:         %[[DIM:.*]] = memref.dim %[[X]], %c0
// CHECK-NEXT:    %[[C1:.*]] = memref.alloc(%[[DIM]]) : memref<?xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[C1]]
// CHECK:         %[[C2:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK-NEXT:    memref.copy %[[X]], %[[C2]]
// CHECK-NEXT:    return %[[X]], %[[C1]], %[[C2]]
func.func @dynamic_three_times(%x: memref<?xf32>) -> (memref<?xf32>, memref<?xf32>, memref<?xf32>) {
  return %x, %x, %x : memref<?xf32>, memref<?xf32>, memref<?xf32>
}

// -----
// Distinct results: nothing changes.
// CHECK-LABEL: func @distinct
// CHECK-NOT:     memref.copy
// CHECK:         return %{{.*}}, %{{.*}} : memref<4xf32>, memref<4xf32>
func.func @distinct(%a: memref<4xf32>, %b: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  return %a, %b : memref<4xf32>, memref<4xf32>
}
