// RUN: ds-opt %s --split-input-file --verify-diagnostics --ds-moe-expert-parallel="ep-size=2 dp-size=2"

// A model without a MoE layer has nothing to spread: ep_size > 1 is a
// mistake in the config, not something to ignore.
// expected-error @+1 {{ds-moe-expert-parallel: moe.ep_size 2 but the model has no MoE layer (dsnn.moe); set ep_size to 1 or train a model with experts}}
module {
  func.func @forward(%w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = 0.02>},
                     %x: tensor<2x8xf32>) -> tensor<f32> {
    %y = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Three experts do not split over two ranks.
module {
  func.func @forward(%wg: tensor<3x8xf32> {dsnn.param = #dsnn.param<name = "gate", init = normal, std = 0.02>},
                     %w1: tensor<3x8x8xf32> {dsnn.param = #dsnn.param<name = "w1", init = normal, std = 0.02, expert = 0>},
                     %x: tensor<2x3x8xf32>) -> tensor<f32> {
    // expected-error @+1 {{ds-moe-expert-parallel: num_experts 3 is not divisible by ep-size 2; every expert-parallel rank holds the same number of experts}}
    %y, %aux = dsnn.moe %x, %wg experts(%w1 : tensor<3x8x8xf32>)
        {num_experts = 3 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
        : tensor<2x3x8xf32>, tensor<3x8xf32> -> tensor<2x3x8xf32>, tensor<f32> {
      ^bb0(%tok: tensor<3x4x8xf32>, %a: tensor<3x8x8xf32>):
        %h = dsnn.batch_matmul %tok, %a {transpose_b} : tensor<3x4x8xf32>, tensor<3x8x8xf32> -> tensor<3x4x8xf32>
        dsnn.yield %h : tensor<3x4x8xf32>
    }
    return %aux : tensor<f32>
  }
}
