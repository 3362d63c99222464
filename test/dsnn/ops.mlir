// RUN: ds-opt %s | ds-opt | FileCheck %s
// RUN: ds-opt %s --mlir-print-op-generic | ds-opt | FileCheck %s

// Round trip of every dsnn op in its pretty form and through the generic form.

// CHECK-LABEL: func @linear_algebra
func.func @linear_algebra(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>,
                          %a: tensor<4x8xf32>, %m: tensor<8x3xf32>, %mt: tensor<3x8xf32>,
                          %q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>) {
  // CHECK: dsnn.linear %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  %0 = dsnn.linear %x, %w, %b : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: dsnn.linear %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
  %1 = dsnn.linear %x, %w : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
  // CHECK: dsnn.matmul %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %2 = dsnn.matmul %a, %m : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  // CHECK: dsnn.matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  %3 = dsnn.matmul %a, %mt {transpose_b} : tensor<4x8xf32>, tensor<3x8xf32> -> tensor<4x3xf32>
  // CHECK: dsnn.batch_matmul %{{.*}}, %{{.*}} {transpose_b} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
  %4 = dsnn.batch_matmul %q, %k {transpose_b} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x8xf32>
  // CHECK: dsnn.batch_matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x4x4xf32>
  %5 = dsnn.batch_matmul %q, %k {transpose_a} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x4x4xf32>
  return
}

// CHECK-LABEL: func @embedding_norms_activations
func.func @embedding_norms_activations(%ids: tensor<2x8xi64>, %wte: tensor<50x16xf32>,
                                       %g: tensor<16xf32>, %b: tensor<16xf32>) {
  // CHECK: dsnn.embedding %{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<50x16xf32> -> tensor<2x8x16xf32>
  %e = dsnn.embedding %ids, %wte : tensor<2x8xi64>, tensor<50x16xf32> -> tensor<2x8x16xf32>
  // CHECK: dsnn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %0 = dsnn.layer_norm %e, %g, %b eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  // CHECK: dsnn.rms_norm %{{.*}}, %{{.*}} eps 9.9999999999999995E-7 : tensor<2x8x16xf32>, tensor<16xf32>
  %1 = dsnn.rms_norm %e, %g eps 1.0e-06 : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK: dsnn.gelu %{{.*}} : tensor<2x8x16xf32>
  %2 = dsnn.gelu %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.gelu %{{.*}} approximate tanh : tensor<2x8x16xf32>
  %3 = dsnn.gelu %0 approximate tanh : tensor<2x8x16xf32>
  // CHECK: dsnn.relu
  %4 = dsnn.relu %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.silu
  %5 = dsnn.silu %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.tanh
  %6 = dsnn.tanh %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.exp
  %7 = dsnn.exp %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.neg
  %8 = dsnn.neg %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.rsqrt
  %rs = dsnn.rsqrt %0 : tensor<2x8x16xf32>
  // CHECK: dsnn.softmax %{{.*}} dim -1 : tensor<2x8x16xf32>
  %9 = dsnn.softmax %0 dim -1 : tensor<2x8x16xf32>
  // CHECK: dsnn.log_softmax %{{.*}} dim 2 : tensor<2x8x16xf32>
  %10 = dsnn.log_softmax %0 dim 2 : tensor<2x8x16xf32>
  // CHECK: dsnn.dropout %{{.*}} p 1.000000e-01 : tensor<2x8x16xf32>
  %11 = dsnn.dropout %0 p 0.1 : tensor<2x8x16xf32>
  return
}

// CHECK-LABEL: func @attention
func.func @attention(%q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x6xf32>) -> tensor<2x4x8x6xf32> {
  // CHECK: dsnn.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 5.000000e-01 : f64} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  %0 = dsnn.attention %q, %k, %v {causal, scale = 0.5 : f64} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
  return %0 : tensor<2x4x8x6xf32>
}

// CHECK-LABEL: func @elementwise_broadcast
func.func @elementwise_broadcast(%x: tensor<8x64xf32>, %b: tensor<64xf32>, %s: tensor<f32>, %c: tensor<8x1xf32>) {
  // CHECK: dsnn.add %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %0 = dsnn.add %x, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  // CHECK: dsnn.sub %{{.*}}, %{{.*}} : tensor<8x1xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %1 = dsnn.sub %c, %b : tensor<8x1xf32>, tensor<64xf32> -> tensor<8x64xf32>
  // CHECK: dsnn.mul %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  %2 = dsnn.mul %x, %s : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  // CHECK: dsnn.div %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
  %3 = dsnn.div %x, %c : tensor<8x64xf32>, tensor<8x1xf32> -> tensor<8x64xf32>
  return
}

// CHECK-LABEL: func @masks
func.func @masks(%ids: tensor<2x8xi64>, %pad: tensor<i64>, %x: tensor<2x4x8x8xf32>, %fill: tensor<f32>) -> tensor<2x4x8x8xf32> {
  // CHECK: dsnn.compare ne %{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<i64> -> tensor<2x8xi1>
  %0 = dsnn.compare ne %ids, %pad : tensor<2x8xi64>, tensor<i64> -> tensor<2x8xi1>
  %1 = dsnn.reshape %0 : tensor<2x8xi1> -> tensor<2x1x1x8xi1>
  // CHECK: dsnn.compare eq %{{.*}}, %{{.*}} : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xi1>
  %2 = dsnn.compare eq %x, %fill : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xi1>
  // CHECK: dsnn.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = dsnn.select %1, %fill, %x : tensor<2x1x1x8xi1>, tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  return %3 : tensor<2x4x8x8xf32>
}

// CHECK-LABEL: func @shapes_and_casts
func.func @shapes_and_casts(%x: tensor<2x8x48xf32>, %y: tensor<2x8x16xbf16>) {
  // CHECK: dsnn.reshape %{{.*}} : tensor<2x8x48xf32> -> tensor<16x48xf32>
  %0 = dsnn.reshape %x : tensor<2x8x48xf32> -> tensor<16x48xf32>
  // CHECK: dsnn.transpose %{{.*}} perm [1, 0, 2] : tensor<2x8x48xf32> -> tensor<8x2x48xf32>
  %1 = dsnn.transpose %x perm [1, 0, 2] : tensor<2x8x48xf32> -> tensor<8x2x48xf32>
  // CHECK: %{{.*}}:3 = dsnn.split %{{.*}} dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %q, %k, %v = dsnn.split %x dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  // CHECK: dsnn.concat %{{.*}}, %{{.*}} dim -1 : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x32xf32>
  %2 = dsnn.concat %q, %k dim -1 : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x32xf32>
  // CHECK: dsnn.cast %{{.*}} : tensor<2x8x16xbf16> -> tensor<2x8x16xf32>
  %3 = dsnn.cast %y : tensor<2x8x16xbf16> -> tensor<2x8x16xf32>
  // CHECK: dsnn.grad_scale %{{.*}} by %{{.*}} : tensor<2x8x16xf32>, tensor<f32>
  %s = arith.constant dense<1024.0> : tensor<f32>
  %4 = dsnn.grad_scale %3 by %s : tensor<2x8x16xf32>, tensor<f32>
  return
}

// CHECK-LABEL: func @reductions_and_losses
func.func @reductions_and_losses(%x: tensor<2x8x16xf32>, %logits: tensor<2x8x50xf32>, %t: tensor<2x8xi64>) {
  // CHECK: dsnn.reduce_sum %{{.*}} dims [0, 1] : tensor<2x8x16xf32> -> tensor<16xf32>
  %0 = dsnn.reduce_sum %x dims [0, 1] : tensor<2x8x16xf32> -> tensor<16xf32>
  // CHECK: dsnn.reduce_mean %{{.*}} dims [-1] {keep_dims} : tensor<2x8x16xf32> -> tensor<2x8x1xf32>
  %1 = dsnn.reduce_mean %x dims [-1] {keep_dims} : tensor<2x8x16xf32> -> tensor<2x8x1xf32>
  // CHECK: dsnn.cross_entropy %{{.*}}, %{{.*}} : tensor<2x8x50xf32>, tensor<2x8xi64> -> tensor<f32>
  %2 = dsnn.cross_entropy %logits, %t : tensor<2x8x50xf32>, tensor<2x8xi64> -> tensor<f32>
  // CHECK: dsnn.cross_entropy %{{.*}}, %{{.*}} {ignore_index = 0 : i64}
  %3 = dsnn.cross_entropy %logits, %t {ignore_index = 0 : i64} : tensor<2x8x50xf32>, tensor<2x8xi64> -> tensor<f32>
  // CHECK: dsnn.mse_loss %{{.*}}, %{{.*}} : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<f32>
  %4 = dsnn.mse_loss %x, %x : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<f32>
  return
}

// A vocabulary piece of 25 rows starting at %o: embedding, row max, the
// cross-entropy's parts and its vocabulary-parallel form.
// CHECK-LABEL: func @vocab_parallel
func.func @vocab_parallel(%ids: tensor<2x8xi64>, %w: tensor<25x16xf32>, %o: tensor<1xi64>,
                          %l: tensor<2x8x25xf32>, %m: tensor<2x8xf32>) {
  // CHECK: dsnn.embedding %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8xi64>, tensor<25x16xf32>, tensor<1xi64> -> tensor<2x8x16xf32>
  %0 = dsnn.embedding %ids, %w offset %o : tensor<2x8xi64>, tensor<25x16xf32>, tensor<1xi64> -> tensor<2x8x16xf32>
  // CHECK: dsnn.reduce_max %{{.*}} dims [2] : tensor<2x8x25xf32> -> tensor<2x8xf32>
  %1 = dsnn.reduce_max %l dims [2] : tensor<2x8x25xf32> -> tensor<2x8xf32>
  // CHECK: dsnn.cross_entropy_parts %{{.*}}, %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<1xi64> -> tensor<2x8xf32>, tensor<2x8xf32>
  %s, %p = dsnn.cross_entropy_parts %l, %ids, %m offset %o : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<1xi64> -> tensor<2x8xf32>, tensor<2x8xf32>
  // CHECK: dsnn.cross_entropy %{{.*}}, %{{.*}} stats %{{.*}}, %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64> -> tensor<f32>
  %2 = dsnn.cross_entropy %l, %ids stats %m, %s, %p offset %o : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64> -> tensor<f32>
  return
}

// CHECK-LABEL: func @layer_and_moe
func.func @layer_and_moe(%x: tensor<16x16xf32>, %wg: tensor<4x16xf32>,
                         %w1: tensor<4x64x16xf32>, %w2: tensor<4x16x64xf32>) -> (tensor<16x16xf32>, tensor<f32>) {
  // CHECK: dsnn.layer "h.0"("GPT2Block") -> tensor<16x16xf32>, tensor<f32> {
  // CHECK:   dsnn.moe %{{.*}}, %{{.*}} experts(%{{.*}}, %{{.*}} : tensor<4x64x16xf32>, tensor<4x16x64xf32>) {capacity_factor = 1.250000e+00 : f64, k = 2 : i64, num_experts = 4 : i64} : tensor<16x16xf32>, tensor<4x16xf32> -> tensor<16x16xf32>, tensor<f32> {
  // CHECK:   ^bb0(%{{.*}}: tensor<4x10x16xf32>, %{{.*}}: tensor<4x64x16xf32>, %{{.*}}: tensor<4x16x64xf32>):
  // CHECK:     dsnn.batch_matmul
  // CHECK:     dsnn.yield %{{.*}} : tensor<4x10x16xf32>
  // CHECK:   dsnn.yield %{{.*}} : tensor<16x16xf32>
  %y, %aux = dsnn.layer "h.0" ("GPT2Block") -> tensor<16x16xf32>, tensor<f32> {
    %o, %a = dsnn.moe %x, %wg experts(%w1, %w2 : tensor<4x64x16xf32>, tensor<4x16x64xf32>)
        {num_experts = 4 : i64, k = 2 : i64, capacity_factor = 1.25 : f64}
        : tensor<16x16xf32>, tensor<4x16xf32> -> tensor<16x16xf32>, tensor<f32> {
      ^bb0(%tok: tensor<4x10x16xf32>, %a1: tensor<4x64x16xf32>, %a2: tensor<4x16x64xf32>):
        %h = dsnn.batch_matmul %tok, %a1 {transpose_b} : tensor<4x10x16xf32>, tensor<4x64x16xf32> -> tensor<4x10x64xf32>
        %g = dsnn.gelu %h : tensor<4x10x64xf32>
        %out = dsnn.batch_matmul %g, %a2 {transpose_b} : tensor<4x10x64xf32>, tensor<4x16x64xf32> -> tensor<4x10x16xf32>
        dsnn.yield %out : tensor<4x10x16xf32>
    }
    dsnn.yield %o, %a : tensor<16x16xf32>, tensor<f32>
  }
  return %y, %aux : tensor<16x16xf32>, tensor<f32>
}
