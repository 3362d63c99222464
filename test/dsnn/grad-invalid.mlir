// RUN: ds-opt %s -split-input-file -verify-diagnostics

// Every verifier message of the backward ops that the forward-op tests do
// not already trigger.

func.func @softmax_grad_dim(%y: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.softmax_grad' op dim -3 is out of range for rank 2 (allowed -2..1)}}
  %0 = dsnn.softmax_grad %y, %y dim -3 : tensor<4x8xf32>
  return
}

// -----
func.func @log_softmax_grad_dim(%y: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.log_softmax_grad' op dim 2 is out of range for rank 2 (allowed -2..1)}}
  %0 = dsnn.log_softmax_grad %y, %y dim 2 : tensor<4x8xf32>
  return
}

// -----
func.func @layer_norm_grad_weight(%x: tensor<2x16xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'dsnn.layer_norm_grad' op weight shape [8] but expected [16] (input's last dim)}}
  %0:3 = dsnn.layer_norm_grad %x, %w, %x eps 1.0e-05 : tensor<2x16xf32>, tensor<8xf32>
  return
}

// -----
func.func @rms_norm_grad_eps(%x: tensor<2x16xf32>, %w: tensor<16xf32>) {
  // expected-error @+1 {{'dsnn.rms_norm_grad' op epsilon is -1 but must be > 0}}
  %0:2 = dsnn.rms_norm_grad %x, %w, %x eps -1.0 : tensor<2x16xf32>, tensor<16xf32>
  return
}

// -----
func.func @attention_grad_causal(%q: tensor<2x4x4xf32>, %k: tensor<2x8x4xf32>, %g: tensor<2x4x4xf32>) {
  // expected-error @+1 {{'dsnn.attention_grad' op causal attention needs query length == key length, got 4 and 8}}
  %0:3 = dsnn.attention_grad %q, %k, %k, %g {causal} : tensor<2x4x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x4x4xf32>
  return
}

// -----
func.func @attention_grad_shape(%q: tensor<2x8x4xf32>, %g: tensor<2x8x5xf32>) {
  // expected-error @+1 {{'dsnn.attention_grad' op grad type 'tensor<2x8x5xf32>' must be the attention output's: shape [2, 8, 4], element type 'f32'}}
  %0:3 = dsnn.attention_grad %q, %q, %q, %g : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x5xf32>
  return
}

// -----
func.func @cross_entropy_grad_scalar(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'dsnn.cross_entropy_grad' op logits must have rank >= 1 [..., vocab]}}
  %0 = dsnn.cross_entropy_grad %l, %t, %l : tensor<f32>, tensor<i64>, tensor<f32>
  return
}

// -----
func.func @cross_entropy_grad_targets(%l: tensor<2x8x50xf32>, %t: tensor<8xi64>, %g: tensor<f32>) {
  // expected-error @+1 {{'dsnn.cross_entropy_grad' op targets shape [8] must equal the logits shape without its last dim, [2, 8]}}
  %0 = dsnn.cross_entropy_grad %l, %t, %g : tensor<2x8x50xf32>, tensor<8xi64>, tensor<f32>
  return
}

// -----
func.func @embedding_grad_rank(%i: tensor<2x8xi64>, %g: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'dsnn.embedding_grad' op result must be the rank-2 table [vocab, dim], got rank 1}}
  %0 = dsnn.embedding_grad %i, %g : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<50xf32>
  return
}

// -----
func.func @embedding_grad_dtype(%i: tensor<2x8xi64>, %g: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'dsnn.embedding_grad' op result element type 'bf16' does not match grad element type 'f32'}}
  %0 = dsnn.embedding_grad %i, %g : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<50x16xbf16>
  return
}

// -----
func.func @embedding_grad_shape(%i: tensor<2x8xi64>, %g: tensor<2x16xf32>) {
  // expected-error @+1 {{'dsnn.embedding_grad' op grad shape [2, 16] must be indices shape + [table dim 1] = [2, 8, 16]}}
  %0 = dsnn.embedding_grad %i, %g : tensor<2x8xi64>, tensor<2x16xf32> -> tensor<50x16xf32>
  return
}
