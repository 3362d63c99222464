// RUN: ds-opt %s --ds-lower-to-runtime --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-lower-to-runtime='report=1' --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=REPORT

// A zero fill of the output right before the matmul becomes beta = 0.
// CHECK-LABEL: func.func private @dsrt_sgemm(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
// CHECK-LABEL: func @plain
// CHECK-NOT:     linalg.fill
// CHECK-DAG:     %[[NT:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         call @dsrt_sgemm(%[[NT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]], %{{.*}}, %{{.*}})
// CHECK-NOT:     linalg.matmul
func.func @plain(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x16xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// Without a fill the product accumulates into C: beta = 1.
// CHECK-LABEL: func @accumulate
// CHECK:         %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         call @dsrt_sgemm({{.*}}, %[[BETA1]], %{{.*}}, %{{.*}})
func.func @accumulate(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// A Linear layer's weight [out, in]: B transposed through indexing_maps.
// CHECK-LABEL: func @transpose_b
// CHECK-DAG:     %[[N:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[T:.*]] = arith.constant 1 : i32
// CHECK:         call @dsrt_sgemm(%[[N]], %[[T]],
func.func @transpose_b(%x: memref<8x4xf32>, %w: memref<16x4xf32>, %y: memref<8x16xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                 affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%x, %w : memref<8x4xf32>, memref<16x4xf32>) outs(%y : memref<8x16xf32>)
  return
}

// -----

// dW = dYᵀ · X: A transposed.
// CHECK-LABEL: func @transpose_a
// CHECK-DAG:     %[[N:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[T:.*]] = arith.constant 1 : i32
// CHECK:         call @dsrt_sgemm(%[[T]], %[[N]],
func.func @transpose_a(%dy: memref<8x16xf32>, %x: memref<8x4xf32>, %dw: memref<16x4xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                 affine_map<(m, n, k) -> (k, n)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%dy, %x : memref<8x16xf32>, memref<8x4xf32>) outs(%dw : memref<16x4xf32>)
  return
}

// -----

// Batched, with per-operand batch strides from the metadata.
// CHECK-LABEL: func.func private @dsrt_sgemm_strided_batched(i32, i32, i64, i64, i64, f32, !llvm.ptr, i64, i64, !llvm.ptr, i64, i64, f32, !llvm.ptr, i64, i64, i64) -> i32
// CHECK-LABEL: func @batched
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}:3, %[[SA:.*]]:3 = memref.extract_strided_metadata %arg0
// CHECK:         %[[STRIDEA:.*]] = arith.index_cast %[[SA]]#0 : index to i64
// CHECK:         call @dsrt_sgemm_strided_batched({{([^,]*, ){8}%}}[[STRIDEA]], 
func.func @batched(%a: memref<4x8x16xf32>, %b: memref<4x16x8xf32>, %c: memref<4x8x8xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<4x8x16xf32>, memref<4x16x8xf32>) outs(%c : memref<4x8x8xf32>)
  return
}

// -----

// One weight shared by the batch: its batch stride is 0.
// CHECK-LABEL: func @broadcast_b
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK:         call @dsrt_sgemm_strided_batched({{([^,]*, ){11}%}}[[ZERO]], 
func.func @broadcast_b(%a: memref<4x8x16xf32>, %w: memref<16x8xf32>, %c: memref<4x8x8xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                                       affine_map<(b, m, n, k) -> (k, n)>,
                                       affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %w : memref<4x8x16xf32>, memref<16x8xf32>) outs(%c : memref<4x8x8xf32>)
  return
}

// -----

// A subview with a row stride larger than its width: lda comes from the
// metadata and the offset is added to the pointer.
// CHECK-LABEL: func @subview
// CHECK:         %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[SV:.*]] :
// CHECK:         llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         call @dsrt_sgemm
func.func @subview(%a: memref<8x32xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) {
  %s = memref.subview %a[0, 4] [8, 4] [1, 1] : memref<8x32xf32> to memref<8x4xf32, strided<[32, 1], offset: 4>>
  linalg.matmul ins(%s, %b : memref<8x4xf32, strided<[32, 1], offset: 4>>, memref<4x16xf32>) outs(%c : memref<8x16xf32>)
  return
}

// -----

// A column-major output (a transposed view): Cᵀ = Bᵀ·Aᵀ, so both flags flip.
// CHECK-LABEL: func @column_major_c
// CHECK-DAG:     %[[T:.*]] = arith.constant 1 : i32
// CHECK:         call @dsrt_sgemm(%[[T]], %[[T]],
func.func @column_major_c(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %ct: memref<16x8xf32>) {
  %c = memref.transpose %ct (i, j) -> (j, i) : memref<16x8xf32> to memref<8x16xf32, strided<[1, 8]>>
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x16xf32>) outs(%c : memref<8x16xf32, strided<[1, 8]>>)
  return
}

// -----

// bf16 operands into an f32 result (ds-bf16-contractions makes these): the
// bf16 GEMM, on pointers offset in 2-byte elements.
// CHECK-LABEL: func @bf16_operands
// CHECK:         llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, bf16
// CHECK:         call @dsrt_gemm_bf16(
// CHECK-NOT:     linalg.generic
#mk = affine_map<(m, n, k) -> (m, k)>
#kn = affine_map<(m, n, k) -> (k, n)>
#mn = affine_map<(m, n, k) -> (m, n)>
func.func @bf16_operands(%a: memref<8x4xbf16>, %b: memref<4x16xbf16>, %c: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<8x4xbf16>, memref<4x16xbf16>) outs(%c : memref<8x16xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Not f32: left as loops, and said so.
// CHECK-LABEL: func @f64_stays
// CHECK:         linalg.matmul
// REPORT: remark: left as loops: element types are not f32, or bf16 operands into f32
// REPORT: remark: ds-lower-to-runtime: 0 contraction(s) call BLAS, 1 left as loops
func.func @f64_stays(%a: memref<8x4xf64>, %b: memref<4x16xf64>, %c: memref<8x16xf64>) {
  linalg.matmul ins(%a, %b : memref<8x4xf64>, memref<4x16xf64>) outs(%c : memref<8x16xf64>)
  return
}

// -----

// Tensors are not this pass's business (it runs after bufferization).
// CHECK-LABEL: func @tensor_stays
// CHECK:         linalg.matmul
func.func @tensor_stays(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>, %c: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// memref.copy between strided buffers becomes linalg.copy (loops), not a
// call into MLIR's C runner utilities; contiguous copies stay memcpy.
// CHECK-LABEL: func @strided_copy
// CHECK:         linalg.copy
// CHECK:         memref.copy %arg0, %arg2 : memref<8x32xf32> to memref<8x32xf32>
func.func @strided_copy(%a: memref<8x32xf32>, %b: memref<8x4xf32>, %d: memref<8x32xf32>) {
  %s = memref.subview %a[0, 4] [8, 4] [1, 1] : memref<8x32xf32> to memref<8x4xf32, strided<[32, 1], offset: 4>>
  memref.copy %s, %b : memref<8x4xf32, strided<[32, 1], offset: 4>> to memref<8x4xf32>
  memref.copy %a, %d : memref<8x32xf32> to memref<8x32xf32>
  return
}
