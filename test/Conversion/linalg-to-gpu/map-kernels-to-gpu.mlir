// RUN: ds-opt %s --ds-map-kernels-to-gpu="report=true" -split-input-file -verify-diagnostics | FileCheck %s

// Elementwise with a broadcast operand: one thread per element (800 points,
// 4 blocks of 256), a bounds guard, loads and the store through the
// indexing maps, the flat id split by 64-bit div/rem.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @tanh_bias
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK:         gpu.launch blocks({{.*}}) in (%{{.*}} = %[[C4]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]]) threads({{.*}}) in (%{{.*}} = %[[C256]], %{{.*}} = %[[C1]], %{{.*}} = %[[C1]])
// CHECK:           %[[ID:.*]] = arith.addi
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[ID]], %c800
// CHECK:           scf.if %[[IN]]
// CHECK:             arith.remui %[[ID]], %c100
// CHECK:             arith.divui %[[ID]], %c100
// CHECK:             memref.load %arg0
// CHECK:             memref.load %arg1
// CHECK:             arith.addf
// CHECK:             math.tanh
// CHECK:             memref.store {{.*}}, %arg2
// CHECK:           gpu.terminator
// CHECK-NOT:     linalg.generic
func.func @tanh_bias(%x: memref<8x100xf32>, %b: memref<100xf32>, %y: memref<8x100xf32>) {
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x100xf32>, memref<100xf32>) outs(%y : memref<8x100xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  }
  return
}

// -----

// A row reduction (softmax's sum of exponentials): one block per row, the
// block 128 threads (100 rounded up to warps); each thread folds a strided
// slice from the neutral element, the block combines in gpu.all_reduce's
// fixed tree, thread 0 folds the total into the output.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_sum_exp
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C8]], {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BDIM:.*]] = %[[C128]], {{.*}})
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[PART:.*]] = scf.for %[[K:.*]] = %[[TX]] to %c100 step %[[BDIM]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK:             math.exp
// CHECK:             %[[NEXT:.*]] = arith.addf %{{.*}}, %[[ACC]]
// CHECK:             scf.yield %[[NEXT]]
// CHECK:           %[[TOTAL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[TX]], %c0
// CHECK:           scf.if %[[FIRST]]
// CHECK:             %[[OLD:.*]] = memref.load %arg2
// CHECK:             %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK:             memref.store %[[NEW]], %arg2
func.func @row_sum_exp(%x: memref<8x100xf32>, %m: memref<8xf32>, %s: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x, %m : memref<8x100xf32>, memref<8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %d = arith.subf %a, %mx : f32
    %e = math.exp %d : f32
    %r = arith.addf %e, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A max reduction starts from -inf and combines with maximumf.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_max
// CHECK:         arith.constant 0xFF800000 : f32
// CHECK:         gpu.all_reduce maximumf
// CHECK:         arith.maximumf
func.func @row_max(%x: memref<8x100xf32>, %m: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A bias gradient (reduce the leading dim) after a named fill: the fill is
// generalized and becomes a parallel kernel; the column sum gets one block
// per column, its threads striding over the 8 rows.
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @bias_grad
// CHECK:         gpu.launch
// CHECK:           memref.store %{{.*}}, %arg1
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c100, {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%[[BD:.*]] = %c32,
// CHECK:           scf.for %[[R:.*]] = %[[TX]] to %c8 step %[[BD]]
// CHECK:           gpu.all_reduce add
// CHECK-NOT:     linalg.
func.func @bias_grad(%g: memref<8x100xf32>, %db: memref<100xf32>) {
  %cst = arith.constant 0.0 : f32
  linalg.fill ins(%cst : f32) outs(%db : memref<100xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%g : memref<8x100xf32>) outs(%db : memref<100xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// linalg.index is the thread's own loop index.
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @iota
// CHECK:         %[[COL:.*]] = arith.remui
// CHECK:         arith.index_cast %[[COL]] : index to i32
func.func @iota(%y: memref<4x64xi32>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%y : memref<4x64xi32>) {
  ^bb0(%o: i32):
    %j = linalg.index 1 : index
    %v = arith.index_cast %j : index to i32
    linalg.yield %v : i32
  }
  return
}

// -----

// A reduction into two outputs (a max with its argmax) has no single
// combiner: left as it is, with a remark saying why.
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @argmax
// CHECK-NOT:     gpu.launch
// CHECK:         linalg.generic
func.func @argmax(%x: memref<8x100xf32>, %m: memref<8xf32>, %i: memref<8xindex>) {
  // expected-remark @below {{left on the host: it reduces into more than one output}}
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%m, %i : memref<8xf32>, memref<8xindex>) {
  ^bb0(%a: f32, %acc: f32, %idx: index):
    %j = linalg.index 1 : index
    %gt = arith.cmpf ogt, %a, %acc : f32
    %r = arith.select %gt, %a, %acc : f32
    %ri = arith.select %gt, %j, %idx : index
    linalg.yield %r, %ri : f32, index
  }
  return
}

// -----

// A buffer copy (a strided subview too) is a kernel, a thread per element.
// CHECK-LABEL: func.func @copy
// CHECK-NOT:   memref.copy
// CHECK:       gpu.launch
// CHECK:       memref.load %{{.*}} : memref<4x8xf32, strided<[16, 1]>>
// CHECK:       memref.store {{.*}} : memref<4x8xf32>
func.func @copy(%src: memref<4x16xf32>, %dst: memref<4x8xf32>) {
  %s = memref.subview %src[0, 0] [4, 8] [1, 1] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 1]>>
  memref.copy %s, %dst : memref<4x8xf32, strided<[16, 1]>> to memref<4x8xf32>
  return
}
