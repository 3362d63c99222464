// RUN: ds-opt %s -split-input-file -verify-diagnostics

// Every verifier message of the MoE routing ops, once.

func.func @route_rank(%p: tensor<16xf32>) {
  // expected-error @+1 {{'dsnn.moe_route' op probs must be rank 2 [tokens, experts], got rank 1}}
  %e, %s, %l = dsnn.moe_route %p {k = 1 : i64, capacity = 4 : i64} : tensor<16xf32> -> tensor<16x1xi64>, tensor<16x1xi64>, tensor<4xf32>
  return
}

// -----

func.func @route_k(%p: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsnn.moe_route' op k is 5 but must be in [1, 4] (the experts, probs dim 1)}}
  %e, %s, %l = dsnn.moe_route %p {k = 5 : i64, capacity = 4 : i64} : tensor<16x4xf32> -> tensor<16x5xi64>, tensor<16x5xi64>, tensor<4xf32>
  return
}

// -----

func.func @route_capacity(%p: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsnn.moe_route' op capacity is 0 but must be >= 1}}
  %e, %s, %l = dsnn.moe_route %p {k = 1 : i64, capacity = 0 : i64} : tensor<16x4xf32> -> tensor<16x1xi64>, tensor<16x1xi64>, tensor<4xf32>
  return
}

// -----

func.func @route_choices(%p: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsnn.moe_route' op slots type 'tensor<16x1xi64>' but expected i64 [16, 2] (tokens, k)}}
  %e, %s, %l = dsnn.moe_route %p {k = 2 : i64, capacity = 4 : i64} : tensor<16x4xf32> -> tensor<16x2xi64>, tensor<16x1xi64>, tensor<4xf32>
  return
}

// -----

func.func @route_load(%p: tensor<16x4xf32>) {
  // expected-error @+1 {{'dsnn.moe_route' op load type 'tensor<8xf32>' but expected [4] of the probs' element type}}
  %e, %s, %l = dsnn.moe_route %p {k = 1 : i64, capacity = 4 : i64} : tensor<16x4xf32> -> tensor<16x1xi64>, tensor<16x1xi64>, tensor<8xf32>
  return
}

// -----

func.func @gate_tokens(%p: tensor<16x4xf32>, %e: tensor<8x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_gate' op experts has 8 tokens (dim 0) but the tokens operand has 16}}
  %w = dsnn.moe_gate %p, %e, %e : tensor<16x4xf32>, tensor<8x2xi64> -> tensor<8x2xf32>
  return
}

// -----

func.func @gate_experts_type(%p: tensor<16x4xf32>, %e: tensor<16xi64>) {
  // expected-error @+1 {{'dsnn.moe_gate' op experts must be i64 [N, k], got 'tensor<16xi64>'}}
  %w = dsnn.moe_gate %p, %e, %e : tensor<16x4xf32>, tensor<16xi64> -> tensor<16x2xf32>
  return
}

// -----

func.func @gate_result(%p: tensor<16x4xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_gate' op result shape [16, 3] does not match the expected [16, 2] (from one weight per choice, experts [N, k])}}
  %w = dsnn.moe_gate %p, %e, %e : tensor<16x4xf32>, tensor<16x2xi64> -> tensor<16x3xf32>
  return
}

// -----

func.func @gate_grad(%p: tensor<16x4xf32>, %e: tensor<16x2xi64>, %g: tensor<16x3xf32>) {
  // expected-error @+1 {{'dsnn.moe_gate_grad' op grad type 'tensor<16x3xf32>' must be the combine weights': the experts' shape and the probs' element type}}
  %d = dsnn.moe_gate_grad %p, %e, %e, %g : tensor<16x4xf32>, tensor<16x2xi64>, tensor<16x3xf32>
  return
}

// -----

func.func @dispatch_rank(%x: tensor<16xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_dispatch' op input must be [N, C] or [N, k, C], got rank 1}}
  %d = dsnn.moe_dispatch %x, %e, %e : tensor<16xf32>, tensor<16x2xi64> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @dispatch_choices(%x: tensor<16x3x8xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_dispatch' op input dim 1 is 3 but a per-choice input needs k = 2}}
  %d = dsnn.moe_dispatch %x, %e, %e : tensor<16x3x8xf32>, tensor<16x2xi64> -> tensor<4x8x8xf32>
  return
}

// -----

func.func @dispatch_result(%x: tensor<16x8xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_dispatch' op result type 'tensor<4x8x6xf32>' must be [experts, capacity, 8]}}
  %d = dsnn.moe_dispatch %x, %e, %e : tensor<16x8xf32>, tensor<16x2xi64> -> tensor<4x8x6xf32>
  return
}

// -----

func.func @gather_rank(%y: tensor<32x8xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_gather' op input must be [experts, capacity, C], got rank 2}}
  %g = dsnn.moe_gather %y, %e, %e : tensor<32x8xf32>, tensor<16x2xi64> -> tensor<16x2x8xf32>
  return
}

// -----

func.func @gather_result(%y: tensor<4x8x8xf32>, %e: tensor<16x2xi64>) {
  // expected-error @+1 {{'dsnn.moe_gather' op result shape [16, 8] does not match the expected [16, 2, 8] (from experts [N, k] + [input dim 2])}}
  %g = dsnn.moe_gather %y, %e, %e : tensor<4x8x8xf32>, tensor<16x2xi64> -> tensor<16x8xf32>
  return
}
