// RUN: ds-opt %s -split-input-file -verify-diagnostics

// Every dsnn.moe verifier message, once.

func.func @num_experts(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op num_experts is 0 but must be >= 1}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 0 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @k_range(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op k is 5 but must be in [1, 4] (num_experts)}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 5 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @capacity_factor(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op capacity_factor and eval_capacity_factor must be > 0}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 0.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @min_capacity(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op min_capacity is -1 but must be >= 0}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64, min_capacity = -1 : i64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @input_rank(%x: tensor<f32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op input must have rank >= 1 [..., C]}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<f32>, tensor<4x8xf32> -> tensor<f32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @gate_shape(%x: tensor<16x8xf32>, %wg: tensor<8x4xf32>) {
  // expected-error @+1 {{'dsnn.moe' op gate_weight shape [8, 4] but expected [4, 8] (num_experts, input dim)}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<8x4xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @result_type(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op result type 'tensor<8x8xf32>' must equal the input type 'tensor<16x8xf32>'}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @expert_param_lead(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>, %w: tensor<3x8x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op expert_params #0 shape [3, 8, 8] must lead with num_experts = 4}}
  %y, %a = dsnn.moe %x, %wg experts(%w : tensor<3x8x8xf32>) {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>, %p: tensor<3x8x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @region_arg_count(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>, %w: tensor<4x8x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op expert region takes 1 arguments but needs 2 (dispatched tokens + one per expert param)}}
  %y, %a = dsnn.moe %x, %wg experts(%w : tensor<4x8x8xf32>) {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @region_tokens(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op expert region argument 0 has type 'tensor<4x4x6xf32>' but must be [4, capacity, 8]}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x6xf32>):
    dsnn.yield %t : tensor<4x4x6xf32>
  }
  return
}

// -----
func.func @region_param_type(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>, %w: tensor<4x8x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op expert region argument 1 has type 'tensor<4x8x4xf32>' but expert_params #0 is 'tensor<4x8x8xf32>'}}
  %y, %a = dsnn.moe %x, %wg experts(%w : tensor<4x8x8xf32>) {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>, %p: tensor<4x8x4xf32>):
    dsnn.yield %t : tensor<4x4x8xf32>
  }
  return
}

// -----
func.func @region_yield(%x: tensor<16x8xf32>, %wg: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.moe' op region yields (tensor<4x8xf32>) but the experts must yield the dispatched tokens' type (tensor<4x4x8xf32>)}}
  %y, %a = dsnn.moe %x, %wg {num_experts = 4 : i64, k = 1 : i64, capacity_factor = 1.0 : f64}
      : tensor<16x8xf32>, tensor<4x8xf32> -> tensor<16x8xf32>, tensor<f32> {
  ^bb0(%t: tensor<4x4x8xf32>):
    %r = dsnn.reduce_sum %t dims [1] : tensor<4x4x8xf32> -> tensor<4x8xf32>
    dsnn.yield %r : tensor<4x8xf32>
  }
  return
}
