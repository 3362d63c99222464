// RUN: ds-opt %s --split-input-file --ds-verify-model-contract --verify-diagnostics

// A valid contract: params first, batch after, one scalar loss.
module {
  func.func @forward(
      %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
      %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
      %x: tensor<2x8xf32>, %y: tensor<2x4xf32>) -> tensor<f32> {
    %h = dsnn.layer "fc" ("Linear") -> tensor<2x4xf32> {
      %0 = dsnn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      dsnn.yield %0 : tensor<2x4xf32>
    }
    %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
// expected-error @+1 {{model contract: no func.func @forward with a body; the importer must produce it (or pass entry=NAME)}}
module {
  func.func private @forward(tensor<4xf32>) -> tensor<f32>
}

// -----
module {
  // expected-error @+1 {{model contract: argument #1 (parameter "b") comes after batch argument #0; parameters come first}}
  func.func @forward(%x: tensor<4xf32>,
                     %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "b", init = zeros>}) -> tensor<f32> {
    %l = dsnn.mse_loss %x, %b : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  // expected-error @+1 {{model contract: parameter "w" has type 'tensor<?xf32>'; parameters are statically shaped float tensors}}
  func.func @forward(%w: tensor<?xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                     %x: tensor<4xf32>) -> tensor<f32> {
    %c = tensor.cast %w : tensor<?xf32> to tensor<4xf32>
    %l = dsnn.mse_loss %x, %c : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  // expected-error @+1 {{model contract: argument #0 has a dsnn.param attribute that is not a #dsnn.param<...>}}
  func.func @forward(%w: tensor<4xf32> {dsnn.param = "w"}, %x: tensor<4xf32>) -> tensor<f32> {
    %l = dsnn.mse_loss %x, %w : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  // expected-error @+1 {{model contract: parameter name "w" is used by arguments #0 and #1}}
  func.func @forward(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                     %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                     %x: tensor<4xf32>) -> tensor<f32> {
    %s = dsnn.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %l = dsnn.mse_loss %x, %s : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  // expected-error @+1 {{model contract: tied group "emb" mixes types 'tensor<4xf32>' (argument #0) and 'tensor<8xf32>' (argument #1)}}
  func.func @forward(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "a", init = zeros, tied = "emb">},
                     %b: tensor<8xf32> {dsnn.param = #dsnn.param<name = "b", init = zeros, tied = "emb">},
                     %x: tensor<4xf32>) -> tensor<f32> {
    %l = dsnn.mse_loss %x, %a : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  // expected-error @+1 {{model contract: @forward must return exactly one scalar float loss (tensor<f32>), got ('tensor<4xf32>')}}
  func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----
module {
  func.func @forward(%x: tensor<4xf32>) -> tensor<f32> {
    // expected-error @+1 {{model contract: 'math.exp' is not allowed in a model; use dsnn, arith, tensor ops and func.return}}
    %e = math.exp %x : tensor<4xf32>
    %l = dsnn.mse_loss %x, %e : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----
module {
  func.func @forward(%w: tensor<4x8x8xf32> {dsnn.param = #dsnn.param<name = "experts.w", init = normal, std = 0.02, expert = 0>},
                     %x: tensor<4x8x8xf32>) -> tensor<f32> {
    // expected-error @+1 {{model contract: expert parameter "experts.w" is used outside the expert_params of a dsnn.moe}}
    %l = dsnn.mse_loss %x, %w : tensor<4x8x8xf32>, tensor<4x8x8xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
