// RUN: ds-opt %s --ds-lower-train-to-linalg --split-input-file | FileCheck %s --implicit-check-not="dstrain."

// The norm is one reduction per tensor into one running f64 accumulator
// (hundreds of millions of squares), carried from one to the next as a new
// 0-d tensor (a chain of in-place writes to one buffer is quadratic to
// bufferize) and rounded to f32 once; inputs are widened inside the loop.
// CHECK-LABEL: func @global_norm
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xbf16>)
// CHECK:         %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f64) outs(%{{.*}} : tensor<f64>)
// CHECK:         %[[S0:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%[[A]] : tensor<4x8xf32>) outs(%[[ZERO]] : tensor<f64>)
// CHECK:           arith.extf %{{.*}} : f32 to f64
// CHECK:         %[[V0:.*]] = tensor.extract %[[S0]][]
// CHECK:         %[[C0:.*]] = tensor.from_elements %[[V0]] : tensor<f64>
// CHECK:         %[[S1:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[B]] : tensor<8xbf16>) outs(%[[C0]] : tensor<f64>)
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:           arith.extf %{{.*}} : f32 to f64
// CHECK:         %[[SUM64:.*]] = tensor.extract %[[S1]][]
// CHECK:         %[[SUM:.*]] = arith.truncf %[[SUM64]] : f64 to f32
// CHECK:         %[[NORM:.*]] = math.sqrt %[[SUM]] : f32
// CHECK:         %[[T:.*]] = tensor.from_elements %[[NORM]] : tensor<f32>
// CHECK:         return %[[T]]
func.func @global_norm(%a: tensor<4x8xf32>, %b: tensor<8xbf16>) -> tensor<f32> {
  %n = dstrain.global_norm %a, %b : tensor<4x8xf32>, tensor<8xbf16>
  return %n : tensor<f32>
}

// -----

// `init` continues a running sum of squares: the first reduction adds into
// an f64 copy of it, as every later one does into a fresh copy, and no
// square root follows.
// CHECK-LABEL: func @global_norm_init
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4xf32>, %[[S:[^:]*]]: tensor<f32>)
// CHECK-NOT:     linalg.fill
// CHECK:         %[[V:.*]] = tensor.extract %[[S]][]
// CHECK:         %[[W:.*]] = arith.extf %[[V]] : f32 to f64
// CHECK:         %[[C:.*]] = tensor.from_elements %[[W]] : tensor<f64>
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4xf32>) outs(%[[C]] : tensor<f64>)
// CHECK-NOT:     math.sqrt
// CHECK:         %[[SUM64:.*]] = tensor.extract %[[R]][]
// CHECK:         %[[SUM:.*]] = arith.truncf %[[SUM64]] : f64 to f32
// CHECK-NOT:     math.sqrt
// CHECK:         %[[T:.*]] = tensor.from_elements %[[SUM]] : tensor<f32>
// CHECK:         return %[[T]]
func.func @global_norm_init(%a: tensor<4xf32>, %s: tensor<f32>) -> tensor<f32> {
  %n = dstrain.global_norm %a squared init %s : tensor<4xf32>
  return %n : tensor<f32>
}

// -----

// An f64 running sum (ds-stack-arguments' chains) continues and stays f64:
// no conversion on either side.
// CHECK-LABEL: func @global_norm_init_f64
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4xf32>, %[[S:[^:]*]]: tensor<f64>)
// CHECK:         %[[V:.*]] = tensor.extract %[[S]][]
// CHECK:         %[[C:.*]] = tensor.from_elements %[[V]] : tensor<f64>
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4xf32>) outs(%[[C]] : tensor<f64>)
// CHECK:         %[[SUM:.*]] = tensor.extract %[[R]][]
// CHECK-NOT:     arith.truncf
// CHECK:         %[[T:.*]] = tensor.from_elements %[[SUM]] : tensor<f64>
// CHECK:         return %[[T]]
func.func @global_norm_init_f64(%a: tensor<4xf32>, %s: tensor<f64>) -> tensor<f64> {
  %n = dstrain.global_norm %a squared init %s : tensor<4xf32> -> tensor<f64>
  return %n : tensor<f64>
}

// -----

// Clipping scales every gradient in place by min(1, max_norm / (norm + 1e-6)).
// CHECK-LABEL: func @clip
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xbf16>)
// CHECK:         %[[NORM:.*]] = math.sqrt
// CHECK:         %[[D:.*]] = arith.addf %[[NORM]], %{{.*}} : f32
// CHECK:         %[[Q:.*]] = arith.divf %{{.*}}, %[[D]] : f32
// CHECK:         %[[COEF:.*]] = arith.minimumf %[[Q]], %{{.*}} : f32
// CHECK:         %[[CA:.*]] = linalg.generic {{.*}} outs(%[[A]] : tensor<4x8xf32>)
// CHECK:           arith.mulf %{{.*}}, %[[COEF]] : f32
// CHECK:         %[[CB:.*]] = linalg.generic {{.*}} outs(%[[B]] : tensor<8xbf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:         %[[N:.*]] = tensor.from_elements %[[NORM]] : tensor<f32>
// CHECK:         return %[[CA]], %[[CB]], %[[N]]
func.func @clip(%a: tensor<4x8xf32>, %b: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<8xbf16>, tensor<f32>) {
  %c:2, %n = dstrain.clip_grad_norm %a, %b max_norm 1.0 : tensor<4x8xf32>, tensor<8xbf16>
  return %c#0, %c#1, %n : tensor<4x8xf32>, tensor<8xbf16>, tensor<f32>
}

// -----

// Overflow: an i1 "or" over |x| == inf or unordered, one reduction per
// tensor.
// CHECK-LABEL: func @has_overflow
// CHECK-SAME:    (%[[A:[^:]*]]: tensor<4x8xf32>, %[[B:[^:]*]]: tensor<8xf16>)
// CHECK:         %[[F:.*]] = linalg.fill ins(%false : i1) outs(%{{.*}} : tensor<i1>)
// CHECK:         %[[O0:.*]] = linalg.generic {{.*}} ins(%[[A]] : tensor<4x8xf32>) outs(%[[F]] : tensor<i1>)
// CHECK:           %[[ABS:.*]] = math.absf
// CHECK:           %[[BAD:.*]] = arith.cmpf ueq, %[[ABS]], %cst
// CHECK:           arith.ori %{{.*}}, %[[BAD]] : i1
// CHECK:         %[[V0:.*]] = tensor.extract %[[O0]][]
// CHECK:         %[[C0:.*]] = tensor.from_elements %[[V0]] : tensor<i1>
// CHECK:         %[[O1:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<8xf16>) outs(%[[C0]] : tensor<i1>)
// CHECK:         return %[[O1]]
func.func @has_overflow(%a: tensor<4x8xf32>, %b: tensor<8xf16>) -> tensor<i1> {
  %o = dstrain.has_overflow %a, %b : tensor<4x8xf32>, tensor<8xf16>
  return %o : tensor<i1>
}
