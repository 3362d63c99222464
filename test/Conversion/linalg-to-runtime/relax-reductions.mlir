// RUN: ds-opt %s --ds-relax-reductions | FileCheck %s

// A max combining into the accumulator gets reassoc: any order gives the
// same result.
// CHECK-LABEL: func @row_max
// CHECK:         arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// A sum does not (ds-fixed-order-reductions fixes its order).
// CHECK-LABEL: func @sum_of_squares
// CHECK-NOT:     fastmath
// CHECK-LABEL: func @elementwise_untouched
// CHECK-NOT:     fastmath
func.func @row_max(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
         ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @sum_of_squares(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
         ins(%x : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

func.func @elementwise_untouched(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]}
         ins(%x : tensor<4xf32>) outs(%y : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
