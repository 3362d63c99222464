// A function called twice keeps its own function (and arena) after
// ds-inline-glue; its temporary is not in the caller's buffers.
module {
  func.func private @twice(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %a = dsnn.add %x, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %b = dsnn.add %a, %a : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    return %b : tensor<32x32xf32>
  }
  func.func @train_step(%x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %y = func.call @twice(%x) : (tensor<32x32xf32>) -> tensor<32x32xf32>
    %z = func.call @twice(%y) : (tensor<32x32xf32>) -> tensor<32x32xf32>
    return %z : tensor<32x32xf32>
  }
}
