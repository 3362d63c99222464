// RUN: ds-opt %s --ds-verify-model-contract='entry=main summary=true' -o /dev/null 2>&1 | FileCheck %s

// The entry option picks the function; the summary counts what the contract
// holds: 3 params of 4*8 + 4 + 16*4 = 100 elements, 1 layer.
// CHECK: remark: model contract: 3 parameters, 100 elements, 1 layers
module {
  func.func @main(
      %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "a.weight", init = normal, std = 0.02>},
      %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "a.bias", init = zeros>},
      %e: tensor<16x4xf32> {dsnn.param = #dsnn.param<name = "emb.weight", init = normal, std = 0.02, tied = "emb">},
      %x: tensor<2x8xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
    %h = dsnn.layer "a" ("Linear") -> tensor<2x4xf32> {
      %0 = dsnn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      dsnn.yield %0 : tensor<2x4xf32>
    }
    %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
