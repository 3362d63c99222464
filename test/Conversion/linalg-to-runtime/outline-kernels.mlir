// RUN: ds-opt %s --ds-outline-kernels --split-input-file | FileCheck %s

#id = affine_map<(i) -> (i)>

// Two equal ops on different buffers share one function; its arguments
// are the operands, then values the body reads from above (a scalar).
// CHECK-LABEL: func @repeated_op_shared
// CHECK-NEXT:    call @kernel_0(%arg0, %arg1, %arg4) : (memref<16xf32>, memref<16xf32>, f32) -> ()
// CHECK-NEXT:    call @kernel_0(%arg2, %arg3, %arg4) : (memref<16xf32>, memref<16xf32>, f32) -> ()
// CHECK-NEXT:    return
// CHECK:       func private @kernel_0(%[[A:.*]]: memref<16xf32>, %[[B:.*]]: memref<16xf32>, %[[S:.*]]: f32)
// CHECK-SAME:    attributes {ds.kernel_count = 2 : i64, passthrough = ["noinline"]}
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[S]]
func.func @repeated_op_shared(%a: memref<16xf32>, %b: memref<16xf32>,
                              %c: memref<16xf32>, %d: memref<16xf32>, %s: f32) {
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %s : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<16xf32>) outs(%d : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %s : f32
    linalg.yield %m : f32
  }
  return
}

// -----

#id = affine_map<(i) -> (i)>

// Another shape is another function; a constant the body reads is cloned
// in. Outside a layer function (the step's glue, compiled without
// optimization) an op that occurs once moves too.
// CHECK-LABEL: func @shapes_and_singletons
// CHECK:         call @kernel_0(%arg0, %arg1) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    call @kernel_0(%arg1, %arg0) : (memref<16xf32>, memref<16xf32>) -> ()
// CHECK-NEXT:    call @kernel_1(%arg2, %arg3) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    call @kernel_1(%arg3, %arg2) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    call @kernel_2(%arg0) : (memref<16xf32>) -> ()
// CHECK-NEXT:    return
// CHECK:       func private @kernel_0(
// CHECK-NEXT:    arith.constant 2.000000e+00 : f32
// CHECK:       func private @kernel_1(
// CHECK:       func private @kernel_2({{.*}} attributes {ds.kernel_count = 1 : i64
// CHECK-NEXT:    arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    linalg.fill
// CHECK-NOT:   func private
func.func @shapes_and_singletons(%a: memref<16xf32>, %b: memref<16xf32>,
                                 %c: memref<8xf32>, %d: memref<8xf32>) {
  %two = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%a : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%c : memref<8xf32>) outs(%d : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%d : memref<8xf32>) outs(%c : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32):
    %m = arith.mulf %x, %two : f32
    linalg.yield %m : f32
  }
  linalg.fill ins(%two : f32) outs(%a : memref<16xf32>)
  return
}

// -----

// In a layer function an op that occurs once stays: the function is
// optimized whole.
// CHECK-LABEL: func private @layer_singleton
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    linalg.fill
// CHECK-NEXT:    return
// CHECK-NOT:   func private @kernel
func.func private @layer_singleton(%a: memref<16xf32>)
    attributes {dsnn.layer_count = 2 : i64} {
  %two = arith.constant 2.0 : f32
  linalg.fill ins(%two : f32) outs(%a : memref<16xf32>)
  return
}

// -----

// Ops on tensors are not this pass's (it runs after bufferization).
// CHECK-LABEL: func @tensors_untouched
// CHECK-COUNT-2: linalg.fill
// CHECK-NOT:     call
func.func @tensors_untouched(%t: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %0 = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
