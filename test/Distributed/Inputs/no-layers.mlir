func.func @forward(%w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                   %x: tensor<2x8xf32> {dsnn.batch = "inputs"},
                   %y: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
  %h = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
