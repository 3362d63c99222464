// ds-run passes and receives one tensor per caller position of a function
// with ds.stack arguments and results: @make returns its stack's slices as
// outputs 1 and 0, @add takes slices 0 and 1 of %a as inputs 0 and 2.
// RUN: rm -rf %t && mkdir -p %t
// RUN: ds-run %s --entry make --outputs %t/out_%d.npy --print | FileCheck %s --check-prefix=MAKE
// RUN: ds-run %s --entry add --inputs %t/out_1.npy,%t/out_2.npy,%t/out_0.npy --print | FileCheck %s
// A slice of the wrong type is named by its caller position.
// RUN: ds-run %s --entry four --outputs %t/four.npy
// RUN: not ds-run %s --entry add --inputs %t/out_1.npy,%t/out_2.npy,%t/four.npy 2>&1 | FileCheck %s --check-prefix=SLICE

// MAKE: result 0: tensor<3xf32> = [-6, -15, 5.25]
// MAKE: result 1: tensor<3xf32> = [1, 2.5, -4]
// MAKE: result 2: tensor<3xf32> = [10, 20, 1]
// CHECK: result 0: tensor<3xf32> = [11, 22.5, -3]
// CHECK: result 1: tensor<3xf32> = [4, 5, 6.25]
// SLICE: ds-run: error: @add: input 2 is tensor<4xf32> but the function takes tensor<3xf32> (slice 1 of its argument 0, ds.stack)

func.func @make() -> (tensor<2x3xf32> {ds.stack = array<i64: 1, 0>}, tensor<3xf32>) {
  %a = arith.constant dense<[[1.0, 2.5, -4.0], [-6.0, -15.0, 5.25]]> : tensor<2x3xf32>
  %b = arith.constant dense<[10.0, 20.0, 1.0]> : tensor<3xf32>
  return %a, %b : tensor<2x3xf32>, tensor<3xf32>
}

func.func @add(%a: tensor<2x3xf32> {ds.stack = array<i64: 0, 2>}, %b: tensor<3xf32>)
    -> (tensor<2x3xf32> {ds.stack = array<i64: 0, 1>}) {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

func.func @four() -> tensor<4xf32> {
  %c = arith.constant dense<1.0> : tensor<4xf32>
  return %c : tensor<4xf32>
}
