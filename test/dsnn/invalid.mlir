// RUN: ds-opt %s -split-input-file -verify-diagnostics

// Every dsnn verifier message, once.

// expected-error @+1 {{#dsnn.param needs a non-empty qualified name}}
func.func @param_empty_name(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "", init = zeros>}) { return }

// -----
// expected-error @+1 {{#dsnn.param "w": std is -1 but must be >= 0}}
func.func @param_negative_std(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = -1.0>}) { return }

// -----
// expected-error @+1 {{#dsnn.param "w": tied group name is empty}}
func.func @param_empty_tied(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros, tied = "">}) { return }

// -----
// expected-error @+1 {{#dsnn.param "w": expert index is -2 but must be >= 0}}
func.func @param_negative_expert(%a: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros, expert = -2>}) { return }

// -----
func.func @linear_scalar_input(%x: tensor<f32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.linear' op input must have rank >= 1, got a scalar}}
  %0 = dsnn.linear %x, %w : (tensor<f32>, tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----
func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<8xf32>) {
  // expected-error @+1 {{'dsnn.linear' op weight must be rank 2 [out, in], got rank 1}}
  %0 = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return
}

// -----
func.func @linear_in_mismatch(%x: tensor<2x8xf32>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.linear' op weight dim 1 (in) is 6 but input's last dim is 8}}
  %0 = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x6xf32>) -> tensor<2x4xf32>
  return
}

// -----
func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'dsnn.linear' op bias shape [8] but expected [4] (weight dim 0)}}
  %0 = dsnn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  return
}

// -----
func.func @linear_dtype(%x: tensor<2x8xbf16>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.linear' op weight element type 'f32' does not match input element type 'bf16'}}
  %0 = dsnn.linear %x, %w : (tensor<2x8xbf16>, tensor<4x8xf32>) -> tensor<2x4xbf16>
  return
}

// -----
func.func @linear_result_shape(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{'dsnn.linear' op result shape [2, 8] does not match the expected [2, 4] (from input [..., in] and weight [out, in])}}
  %0 = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----
func.func @matmul_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x3xf32>) {
  // expected-error @+1 {{'dsnn.matmul' op operands must be rank 2, got lhs rank 3 and rhs rank 2}}
  %0 = dsnn.matmul %a, %b : tensor<2x4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @matmul_contraction(%a: tensor<4x8xf32>, %b: tensor<6x3xf32>) {
  // expected-error @+1 {{'dsnn.matmul' op contraction dims differ: lhs K = 8, rhs K = 6}}
  %0 = dsnn.matmul %a, %b : tensor<4x8xf32>, tensor<6x3xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @batch_matmul_rank(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) {
  // expected-error @+1 {{'dsnn.batch_matmul' op operands must have the same rank >= 3, got lhs rank 2 and rhs rank 2}}
  %0 = dsnn.batch_matmul %a, %b : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @batch_matmul_batch_dim(%a: tensor<2x4x8xf32>, %b: tensor<3x8x3xf32>) {
  // expected-error @+1 {{'dsnn.batch_matmul' op batch dim 0 differs: lhs 2 vs rhs 3}}
  %0 = dsnn.batch_matmul %a, %b : tensor<2x4x8xf32>, tensor<3x8x3xf32> -> tensor<2x4x3xf32>
  return
}

// -----
func.func @embedding_table_rank(%i: tensor<2x8xi64>, %t: tensor<50xf32>) {
  // expected-error @+1 {{'dsnn.embedding' op table must be rank 2 [vocab, dim], got rank 1}}
  %0 = dsnn.embedding %i, %t : tensor<2x8xi64>, tensor<50xf32> -> tensor<2x8xf32>
  return
}

// -----
func.func @embedding_result(%i: tensor<2x8xi64>, %t: tensor<50x16xf32>) {
  // expected-error @+1 {{'dsnn.embedding' op result shape [2, 16] does not match the expected [2, 8, 16] (from indices shape + [table dim 1])}}
  %0 = dsnn.embedding %i, %t : tensor<2x8xi64>, tensor<50x16xf32> -> tensor<2x16xf32>
  return
}

// -----
func.func @layer_norm_scalar(%x: tensor<f32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'dsnn.layer_norm' op input must have rank >= 1, got a scalar}}
  %0 = dsnn.layer_norm %x, %g, %g eps 1.0e-05 : tensor<f32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----
func.func @layer_norm_bias_shape(%x: tensor<2x16xf32>, %g: tensor<16xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'dsnn.layer_norm' op bias shape [8] but expected [16] (input's last dim)}}
  %0 = dsnn.layer_norm %x, %g, %b eps 1.0e-05 : tensor<2x16xf32>, tensor<16xf32>, tensor<8xf32>
  return
}

// -----
func.func @layer_norm_eps(%x: tensor<2x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'dsnn.layer_norm' op epsilon is 0 but must be > 0}}
  %0 = dsnn.layer_norm %x, %g, %g eps 0.0 : tensor<2x16xf32>, tensor<16xf32>, tensor<16xf32>
  return
}

// -----
func.func @rms_norm_dtype(%x: tensor<2x16xf32>, %g: tensor<16xbf16>) {
  // expected-error @+1 {{'dsnn.rms_norm' op weight element type 'bf16' does not match input element type 'f32'}}
  %0 = dsnn.rms_norm %x, %g eps 1.0e-06 : tensor<2x16xf32>, tensor<16xbf16>
  return
}

// -----
func.func @softmax_dim(%x: tensor<2x16xf32>) {
  // expected-error @+1 {{'dsnn.softmax' op dim 2 is out of range for rank 2 (allowed -2..1)}}
  %0 = dsnn.softmax %x dim 2 : tensor<2x16xf32>
  return
}

// -----
func.func @attention_rank(%q: tensor<8x4xf32>, %k: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsnn.attention' op query, key and value must have the same rank >= 2, got 2, 3, 3}}
  %0 = dsnn.attention %q, %k, %k : tensor<8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<8x4xf32>
  return
}

// -----
func.func @attention_leading(%q: tensor<2x8x4xf32>, %k: tensor<3x8x4xf32>) {
  // expected-error @+1 {{'dsnn.attention' op leading dim 0 differs: query 2, key 3, value 3}}
  %0 = dsnn.attention %q, %k, %k : tensor<2x8x4xf32>, tensor<3x8x4xf32>, tensor<3x8x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----
func.func @attention_head_dim(%q: tensor<2x8x4xf32>, %k: tensor<2x8x6xf32>) {
  // expected-error @+1 {{'dsnn.attention' op key head dim is 6 but query head dim is 4}}
  %0 = dsnn.attention %q, %k, %k : tensor<2x8x4xf32>, tensor<2x8x6xf32>, tensor<2x8x6xf32> -> tensor<2x8x6xf32>
  return
}

// -----
func.func @attention_value_len(%q: tensor<2x8x4xf32>, %v: tensor<2x6x4xf32>) {
  // expected-error @+1 {{'dsnn.attention' op value length is 6 but key length is 8}}
  %0 = dsnn.attention %q, %q, %v : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x6x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----
func.func @attention_causal(%q: tensor<2x4x4xf32>, %k: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsnn.attention' op causal attention needs query length == key length, got 4 and 8}}
  %0 = dsnn.attention %q, %k, %k {causal} : tensor<2x4x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
  return
}

// -----
func.func @attention_scale(%q: tensor<2x8x4xf32>) {
  // expected-error @+1 {{'dsnn.attention' op scale is -1 but must be > 0}}
  %0 = dsnn.attention %q, %q, %q {scale = -1.0 : f64} : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----
func.func @dropout_p(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.dropout' op p is 1 but must be in [0, 1)}}
  %0 = dsnn.dropout %x p 1.0 : tensor<4xf32>
  return
}

// -----
func.func @add_dtype(%x: tensor<4xf32>, %y: tensor<4xf16>) {
  // expected-error @+1 {{'dsnn.add' op rhs element type 'f16' does not match lhs element type 'f32'}}
  %0 = dsnn.add %x, %y : tensor<4xf32>, tensor<4xf16> -> tensor<4xf32>
  return
}

// -----
func.func @mul_no_broadcast(%x: tensor<4x3xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.mul' op operand shapes [4, 3] and [4] do not broadcast}}
  %0 = dsnn.mul %x, %y : tensor<4x3xf32>, tensor<4xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @sub_result(%x: tensor<4x3xf32>, %y: tensor<3xf32>) {
  // expected-error @+1 {{'dsnn.sub' op result shape [3] does not match the expected [4, 3] (from broadcasting lhs and rhs)}}
  %0 = dsnn.sub %x, %y : tensor<4x3xf32>, tensor<3xf32> -> tensor<3xf32>
  return
}

// -----
func.func @reshape_dtype(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reshape' op result element type 'f16' differs from input element type 'f32'; use dsnn.cast}}
  %0 = dsnn.reshape %x : tensor<4x3xf32> -> tensor<12xf16>
  return
}

// -----
func.func @reshape_count(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reshape' op input [4, 3] has 12 elements but result [10] has 10}}
  %0 = dsnn.reshape %x : tensor<4x3xf32> -> tensor<10xf32>
  return
}

// -----
func.func @transpose_perm_size(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.transpose' op permutation has 3 entries but the input has rank 2}}
  %0 = dsnn.transpose %x perm [0, 1, 2] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @transpose_not_perm(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.transpose' op permutation [1, 1] is not a permutation of 0..1}}
  %0 = dsnn.transpose %x perm [1, 1] : tensor<4x3xf32> -> tensor<3x3xf32>
  return
}

// -----
func.func @transpose_dtype(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.transpose' op result element type differs from the input's}}
  %0 = dsnn.transpose %x perm [1, 0] : tensor<4x3xf32> -> tensor<3x4xf16>
  return
}

// -----
func.func @transpose_result(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.transpose' op result shape [4, 3] does not match the expected [3, 4] (from permuting the input)}}
  %0 = dsnn.transpose %x perm [1, 0] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----
func.func @split_dim(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.split' op dim 5 is out of range for rank 2 (allowed -2..1)}}
  %0:2 = dsnn.split %x dim 5 : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x3xf32>
  return
}

// -----
func.func @split_none(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.split' op needs at least one result}}
  "dsnn.split"(%x) {dim = 1 : i64} : (tensor<4x6xf32>) -> ()
  return
}

// -----
func.func @split_result_type(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.split' op result 1 type 'tensor<3xf32>' must have the input's rank and element type}}
  %0:2 = dsnn.split %x dim 1 : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<3xf32>
  return
}

// -----
func.func @split_other_dim(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.split' op result 0 dim 0 is 2 but the input's is 4}}
  %0:2 = dsnn.split %x dim 1 : tensor<4x6xf32> -> tensor<2x3xf32>, tensor<4x3xf32>
  return
}

// -----
func.func @split_sizes(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{'dsnn.split' op result sizes along dim 1 add up to 5 but the input has 6}}
  %0:2 = dsnn.split %x dim 1 : tensor<4x6xf32> -> tensor<4x3xf32>, tensor<4x2xf32>
  return
}

// -----
func.func @concat_none() {
  // expected-error @+1 {{'dsnn.concat' op needs at least one input}}
  %0 = "dsnn.concat"() {dim = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----
func.func @concat_dim(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.concat' op dim 2 is out of range for rank 2 (allowed -2..1)}}
  %0 = dsnn.concat %x, %x dim 2 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<8x3xf32>
  return
}

// -----
func.func @concat_input_type(%x: tensor<4x3xf32>, %y: tensor<4x3xf16>) {
  // expected-error @+1 {{'dsnn.concat' op input 1 type 'tensor<4x3xf16>' must have the result's rank and element type}}
  %0 = dsnn.concat %x, %y dim 0 : tensor<4x3xf32>, tensor<4x3xf16> -> tensor<8x3xf32>
  return
}

// -----
func.func @concat_other_dim(%x: tensor<4x3xf32>, %y: tensor<4x2xf32>) {
  // expected-error @+1 {{'dsnn.concat' op input 1 dim 1 is 2 but the result's is 3}}
  %0 = dsnn.concat %x, %y dim 0 : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<8x3xf32>
  return
}

// -----
func.func @concat_sizes(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.concat' op input sizes along dim 0 add up to 8 but the result has 9}}
  %0 = dsnn.concat %x, %x dim 0 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<9x3xf32>
  return
}

// -----
func.func @cast_shape(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.cast' op result shape [12] differs from input shape [4, 3]; a cast changes only the element type}}
  %0 = dsnn.cast %x : tensor<4x3xf32> -> tensor<12xbf16>
  return
}

// -----
func.func @reduce_dim_range(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reduce_sum' op dim 3 is out of range for rank 2 (allowed -2..1)}}
  %0 = dsnn.reduce_sum %x dims [3] : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----
func.func @reduce_dim_twice(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reduce_mean' op dim -1 is listed twice}}
  %0 = dsnn.reduce_mean %x dims [1, -1] : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----
func.func @reduce_dtype(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reduce_sum' op result element type 'f16' does not match input element type 'f32'}}
  %0 = dsnn.reduce_sum %x dims [0] : tensor<4x3xf32> -> tensor<3xf16>
  return
}

// -----
func.func @reduce_keep_dims(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{'dsnn.reduce_sum' op result shape [3] does not match the expected [1, 3] (from reducing dims, keeping them as 1)}}
  %0 = dsnn.reduce_sum %x dims [0] {keep_dims} : tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{'dsnn.cross_entropy' op logits must have rank >= 1 [..., vocab]}}
  %0 = dsnn.cross_entropy %l, %t : tensor<f32>, tensor<i64> -> tensor<f32>
  return
}

// -----
func.func @cross_entropy_targets(%l: tensor<2x8x50xf32>, %t: tensor<2x7xi64>) {
  // expected-error @+1 {{'dsnn.cross_entropy' op targets shape [2, 7] must equal the logits shape without its last dim, [2, 8]}}
  %0 = dsnn.cross_entropy %l, %t : tensor<2x8x50xf32>, tensor<2x7xi64> -> tensor<f32>
  return
}

// -----
func.func @mse_target(%x: tensor<4xf32>, %y: tensor<5xf32>) {
  // expected-error @+1 {{'dsnn.mse_loss' op target type 'tensor<5xf32>' must equal the input type 'tensor<4xf32>'}}
  %0 = dsnn.mse_loss %x, %y : tensor<4xf32>, tensor<5xf32> -> tensor<f32>
  return
}

// -----
func.func @layer_empty_name(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.layer' op layer_name must not be empty}}
  %0 = dsnn.layer "" ("Block") -> tensor<4xf32> {
    dsnn.yield %x : tensor<4xf32>
  }
  return
}

// -----
func.func @layer_block_args(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.layer' op body takes no block arguments; it reads values defined above}}
  %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    dsnn.yield %a : tensor<4xf32>
  }
  return
}

// -----
func.func @layer_no_yield(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.layer' op region must end with dsnn.yield}}
  dsnn.layer "h.0" ("Block") {
    %0 = dsnn.relu %x : tensor<4xf32>
    llvm.unreachable
  }
  return
}

// -----
func.func @layer_yield_types(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.layer' op region yields (tensor<4xf32>) but the layer's results are (tensor<8xf32>)}}
  %0 = dsnn.layer "h.0" ("Block") -> tensor<8xf32> {
    dsnn.yield %x : tensor<4xf32>
  }
  return
}

// -----
func.func @yield_outside(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dsnn.yield' op expects parent op to be one of 'dsnn.layer, dsnn.moe'}}
  dsnn.yield %x : tensor<4xf32>
}

// -----
func.func @compare_types(%x: tensor<4xf32>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'dsnn.compare' op compares 'f32' with 'i64'; cast one operand to the other's type}}
  %0 = dsnn.compare eq %x, %y : tensor<4xf32>, tensor<4xi64> -> tensor<4xi1>
  return
}

// -----
func.func @compare_no_broadcast(%x: tensor<4x3xi64>, %y: tensor<4xi64>) {
  // expected-error @+1 {{'dsnn.compare' op operand shapes [4, 3] and [4] do not broadcast}}
  %0 = dsnn.compare ne %x, %y : tensor<4x3xi64>, tensor<4xi64> -> tensor<4x3xi1>
  return
}

// -----
func.func @select_types(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xbf16>) {
  // expected-error @+1 {{'dsnn.select' op on_false element type 'bf16' does not match on_true element type 'f32'}}
  %0 = dsnn.select %c, %x, %y : tensor<4xi1>, tensor<4xf32>, tensor<4xbf16> -> tensor<4xf32>
  return
}

// -----
func.func @select_no_broadcast(%c: tensor<3xi1>, %x: tensor<4xf32>, %y: tensor<f32>) {
  // expected-error @+1 {{'dsnn.select' op condition, on_true and on_false shapes [3], [4] and [] do not broadcast}}
  %0 = dsnn.select %c, %x, %y : tensor<3xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return
}

// -----
func.func @select_result(%c: tensor<2x1xi1>, %x: tensor<4xf32>, %y: tensor<f32>) {
  // expected-error @+1 {{'dsnn.select' op result shape [4] does not match the expected [2, 4] (from broadcasting condition, on_true and on_false)}}
  %0 = dsnn.select %c, %x, %y : tensor<2x1xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
  return
}

// -----

func.func @embedding_offset(%i: tensor<2x8xi64>, %w: tensor<25x16xf32>, %o: tensor<2xi64>) {
  // expected-error @+1 {{'dsnn.embedding' op offset must be one i64 element, got 'tensor<2xi64>'}}
  %0 = dsnn.embedding %i, %w offset %o : tensor<2x8xi64>, tensor<25x16xf32>, tensor<2xi64> -> tensor<2x8x16xf32>
  return
}

// -----

func.func @cross_entropy_stats(%l: tensor<2x8x25xf32>, %t: tensor<2x8xi64>, %m: tensor<8xf32>, %s: tensor<2x8xf32>, %o: tensor<1xi64>) {
  // expected-error @+1 {{'dsnn.cross_entropy' op max type 'tensor<8xf32>' must have the logits' shape without its last dim, [2, 8], and element 'f32'}}
  %0 = dsnn.cross_entropy %l, %t stats %m, %s, %s offset %o : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64> -> tensor<f32>
  return
}
