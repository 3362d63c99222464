// RUN: grep '^// VALUES:' %s | sed 's|^// VALUES:||' > %t.txt
// RUN: ds-run %s --entry main --expect %t.txt --rtol 1e-5 --atol 1e-6 --report 2>&1 | FileCheck %s
// RUN: ds-run %s --entry main --expect %t.txt --rtol 1e-5 --atol 1e-6 --no-blas

// softmax(a @ b, dim=-1) over a batch of 2: batch_matmul goes to
// dsrt_sgemm_strided_batched, the softmax (max, exp, sum, divide) to loops
// whose temporaries live in the planned arena. Expected values: numpy
// float64, s = a @ b; e = exp(s - s.max(-1)); e / e.sum(-1).
// VALUES: 0.268941421 0.731058579 0.268941421 0.731058579
// VALUES: 0.817574476 0.182425524 0.01798621 0.98201379

// CHECK: remark: ds-plan-buffers: @softmax_bmm: {{[0-9]+}} buffer(s) in a {{[0-9]+}}-byte arena
// CHECK: remark: ds-lower-to-runtime: 1 contraction(s) call BLAS, 0 left as loops

#id3 = affine_map<(b, i, j) -> (b, i, j)>
#red = affine_map<(b, i, j) -> (b, i)>

func.func @softmax_bmm(%a: tensor<2x2x3xf32>, %b: tensor<2x3x2xf32>) -> tensor<2x2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e3 = tensor.empty() : tensor<2x2x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e3 : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %s = linalg.batch_matmul ins(%a, %b : tensor<2x2x3xf32>, tensor<2x3x2xf32>)
         outs(%f : tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  %e2 = tensor.empty() : tensor<2x2xf32>
  %minit = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %max = linalg.generic {indexing_maps = [#id3, #red],
                         iterator_types = ["parallel", "parallel", "reduction"]}
           ins(%s : tensor<2x2x2xf32>) outs(%minit : tensor<2x2xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<2x2xf32>
  %exp = linalg.generic {indexing_maps = [#id3, #red, #id3],
                         iterator_types = ["parallel", "parallel", "parallel"]}
           ins(%s, %max : tensor<2x2x2xf32>, tensor<2x2xf32>) outs(%e3 : tensor<2x2x2xf32>) {
  ^bb0(%v: f32, %m: f32, %out: f32):
    %d = arith.subf %v, %m : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x2x2xf32>
  %sinit = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #red],
                         iterator_types = ["parallel", "parallel", "reduction"]}
           ins(%exp : tensor<2x2x2xf32>) outs(%sinit : tensor<2x2xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a2 = arith.addf %v, %acc : f32
    linalg.yield %a2 : f32
  } -> tensor<2x2xf32>
  %y = linalg.generic {indexing_maps = [#id3, #red, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
         ins(%exp, %sum : tensor<2x2x2xf32>, tensor<2x2xf32>) outs(%e3 : tensor<2x2x2xf32>) {
  ^bb0(%v: f32, %t: f32, %out: f32):
    %q = arith.divf %v, %t : f32
    linalg.yield %q : f32
  } -> tensor<2x2x2xf32>
  return %y : tensor<2x2x2xf32>
}

func.func @main() -> tensor<2x2x2xf32> {
  %a = arith.constant dense<[[[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]],
                             [[0.5, 0.5, 0.5], [-1.0, 2.0, 1.0]]]> : tensor<2x2x3xf32>
  %b = arith.constant dense<[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                             [[2.0, -1.0], [0.0, 1.0], [1.0, 0.0]]]> : tensor<2x3x2xf32>
  %y = func.call @softmax_bmm(%a, %b)
         : (tensor<2x2x3xf32>, tensor<2x3x2xf32>) -> tensor<2x2x2xf32>
  return %y : tensor<2x2x2xf32>
}
