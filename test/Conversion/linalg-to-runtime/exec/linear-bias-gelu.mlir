// RUN: grep '^// VALUES:' %s | sed 's|^// VALUES:||' > %t.txt
// RUN: ds-run %s --entry main --expect %t.txt --rtol 1e-5 --atol 1e-6
// RUN: ds-run %s --entry main --expect %t.txt --rtol 1e-5 --atol 1e-6 --no-blas --no-plan-buffers --no-fuse
// RUN: ds-run %s --entry main --print | FileCheck %s

// y = gelu(x @ w^T + b): a Linear layer in PyTorch's [out, in] weight
// layout (the transpose is an indexing map, read by BLAS as transB), bias
// broadcast, exact (erf) GELU through libm. The expected values are
// numpy.float64: h = x @ w.T + b; y = 0.5 * h * (1 + erf(h / sqrt(2))).
// VALUES: 1.0340031 -0.154268769 -0.0208393784 0.681986838 -0.012250687
// VALUES: 0.345731231 -0.158655254 2.48447584 -0.137831303 1.34338257
// VALUES: -0.127109272 0.936981355 -0.00580789528 0.868501366 -0.00468716546

// CHECK: result 0: tensor<3x5xf32> = {{\[\[}}1.034{{[0-9]*}}, -0.15426{{[0-9]*}},

#x = affine_map<(m, n, k) -> (m, k)>
#wT = affine_map<(m, n, k) -> (n, k)>
#y = affine_map<(m, n, k) -> (m, n)>
#row = affine_map<(m, n) -> (m, n)>
#bias = affine_map<(m, n) -> (n)>

func.func @linear_gelu(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>,
                       %b: tensor<5xf32>) -> tensor<3x5xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.707106781 : f32
  %e = tensor.empty() : tensor<3x5xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %h = linalg.matmul indexing_maps = [#x, #wT, #y]
         ins(%x, %w : tensor<3x4xf32>, tensor<5x4xf32>)
         outs(%f : tensor<3x5xf32>) -> tensor<3x5xf32>
  %y = linalg.generic {indexing_maps = [#row, #bias, #row],
                       iterator_types = ["parallel", "parallel"]}
         ins(%h, %b : tensor<3x5xf32>, tensor<5xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%hv: f32, %bv: f32, %out: f32):
    %s = arith.addf %hv, %bv : f32
    %t = arith.mulf %s, %rsqrt2 : f32
    %erf = math.erf %t : f32
    %p = arith.addf %erf, %one : f32
    %q = arith.mulf %s, %half : f32
    %r = arith.mulf %q, %p : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

func.func @main() -> tensor<3x5xf32> {
  %x = arith.constant dense<[[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0],
                             [-2.0, 0.75, 1.0, -1.25]]> : tensor<3x4xf32>
  %w = arith.constant dense<[[0.2, -0.1, 0.4, 0.3], [-0.5, 0.25, 0.1, 0.0],
                             [1.0, 1.0, -1.0, 0.5], [0.0, -0.3, 0.2, -0.6],
                             [0.7, 0.1, 0.0, 0.9]]> : tensor<5x4xf32>
  %b = arith.constant dense<[0.1, -0.2, 0.0, 0.3, -0.5]> : tensor<5xf32>
  %y = func.call @linear_gelu(%x, %w, %b)
         : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}
