// Two products summed where the first dies: the sum is written over it
// (ds-elementwise-in-place), so the step holds two 4096 B buffers, not three.
module {
  func.func @train_step(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %a = dsnn.matmul %x, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %b = dsnn.matmul %x, %a : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %s = dsnn.add %a, %b : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %t = dsnn.matmul %s, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    return %t : tensor<32x32xf32>
  }
}
