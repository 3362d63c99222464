// RUN: ds-opt %s --ds-bf16-contractions --canonicalize --split-input-file | FileCheck %s
// The pipeline end to end: the product becomes a dsrt_gemm_bf16 call on the
// bf16 buffers, with no widened copy left.
// RUN: ds-opt %s --split-input-file --ds-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// Off (bf16-gemm=false): sgemm on operands widened in the step, as before.
// RUN: ds-opt %s --split-input-file --ds-lower-to-llvm=bf16-gemm=false | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>

// A linear layer's product in bf16 as the NN lowering writes it: both
// operands widened, then an f32 matmul (weight transposed).
// CHECK-LABEL: func @linear
// CHECK-SAME:    (%[[X:.*]]: tensor<8x16xbf16>, %[[W:.*]]: tensor<4x16xbf16>)
// CHECK-NOT:     arith.extf
// CHECK:         linalg.generic {{.*}} ins(%[[X]], %[[W]] : tensor<8x16xbf16>, tensor<4x16xbf16>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK-NEXT:    ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK-DAG:       %[[AF:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK-DAG:       %[[BF:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK:           %[[P:.*]] = arith.mulf %[[AF]], %[[BF]] : f32
// CHECK:           arith.addf %[[C]], %[[P]] : f32
// LLVM-LABEL: llvm.func @linear
// LLVM-NOT:     llvm.call @dsrt_sgemm
// LLVM:         llvm.call @dsrt_gemm_bf16(
// OFF-LABEL: llvm.func @linear
// OFF-NOT:     llvm.call @dsrt_gemm_bf16
// OFF:         llvm.call @dsrt_sgemm(
func.func @linear(%x: tensor<8x16xbf16>, %w: tensor<4x16xbf16>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<8x16xf32>
  %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x16xbf16>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %ww = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4x16xbf16>) outs(%e1 : tensor<4x16xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<4x16xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%xw, %ww : tensor<8x16xf32>, tensor<4x16xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Attention's batched product: the same, with the batch dimension.
// CHECK-LABEL: func @batched
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x8x16xbf16>, tensor<2x16x8xbf16>)
// LLVM-LABEL: llvm.func @batched
// LLVM:         llvm.call @dsrt_gemm_bf16_strided_batched(
func.func @batched(%q: tensor<2x8x16xbf16>, %k: tensor<2x16x8xbf16>) -> tensor<2x8x8xf32> {
  %e0 = tensor.empty() : tensor<2x8x16xf32>
  %qw = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<2x8x16xbf16>) outs(%e0 : tensor<2x8x16xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<2x8x16xf32>
  %e1 = tensor.empty() : tensor<2x16x8xf32>
  %kw = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%k : tensor<2x16x8xbf16>) outs(%e1 : tensor<2x16x8xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<2x16x8xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2x8x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %s = linalg.batch_matmul ins(%qw, %kw : tensor<2x8x16xf32>, tensor<2x16x8xf32>) outs(%z : tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Left alone: one operand is f32 (no bf16 product to run), and an f16
// widening (no f16 GEMM here).
// CHECK-LABEL: func @mixed
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32>)
// CHECK-LABEL: func @half
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x4xf32>)
func.func @mixed(%x: tensor<8x16xbf16>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<8x16xf32>
  %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x16xbf16>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%a: bf16, %o: f32):
    %f = arith.extf %a : bf16 to f32
    linalg.yield %f : f32
  } -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%xw, %w : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

func.func @half(%x: tensor<8x16xf16>, %w: tensor<16x4xf16>) -> tensor<8x4xf32> {
  %e0 = tensor.empty() : tensor<8x16xf32>
  %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x16xf16>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%a: f16, %o: f32):
    %f = arith.extf %a : f16 to f32
    linalg.yield %f : f32
  } -> tensor<8x16xf32>
  %e1 = tensor.empty() : tensor<16x4xf32>
  %ww = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x4xf16>) outs(%e1 : tensor<16x4xf32>) {
  ^bb0(%a: f16, %o: f32):
    %f = arith.extf %a : f16 to f32
    linalg.yield %f : f32
  } -> tensor<16x4xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y = linalg.matmul ins(%xw, %ww : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
