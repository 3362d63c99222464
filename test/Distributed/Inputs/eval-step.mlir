// Inputs/two-gathers.mlir's step with an eval step (an eval set): the
// eval step gathers the first parameter and computes one layer's
// arithmetic inline.
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @train_step(%w0: tensor<512xf32>, %w1: tensor<512xf32>, %x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %g0 = dsdist.all_gather %w0 over ["dp"] dim 0 {phase = "forward"} : tensor<512xf32> -> tensor<1024xf32>
    %v0 = tensor.expand_shape %g0 [[0, 1]] output_shape [32, 32] : tensor<1024xf32> into tensor<32x32xf32>
    %y0 = dsnn.layer "h.0"("Block") -> tensor<32x32xf32> {
      %m = dsnn.matmul %x, %v0 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      %a = dsnn.add %m, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      dsnn.yield %a : tensor<32x32xf32>
    }
    dsdist.release %v0 : tensor<32x32xf32>
    %g1 = dsdist.all_gather %w1 over ["dp"] dim 0 {phase = "forward"} : tensor<512xf32> -> tensor<1024xf32>
    %v1 = tensor.expand_shape %g1 [[0, 1]] output_shape [32, 32] : tensor<1024xf32> into tensor<32x32xf32>
    %y1 = dsnn.layer "h.1"("Block") -> tensor<32x32xf32> {
      %m = dsnn.matmul %y0, %v1 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      dsnn.yield %m : tensor<32x32xf32>
    }
    dsdist.release %v1 : tensor<32x32xf32>
    return %y1 : tensor<32x32xf32>
  }
  func.func @eval_step(%w0: tensor<512xf32>, %w1: tensor<512xf32>, %x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %g0 = dsdist.all_gather %w0 over ["dp"] dim 0 : tensor<512xf32> -> tensor<1024xf32>
    %v0 = tensor.expand_shape %g0 [[0, 1]] output_shape [32, 32] : tensor<1024xf32> into tensor<32x32xf32>
    %m = dsnn.matmul %x, %v0 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %a = dsnn.add %m, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    return %a : tensor<32x32xf32>
  }
}
