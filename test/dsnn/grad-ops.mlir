// RUN: ds-opt %s | ds-opt | FileCheck %s
// RUN: ds-opt %s --mlir-print-op-generic | ds-opt | FileCheck %s

// Round trip of the backward ops autodiff emits.

// CHECK-LABEL: func @activation_grads
func.func @activation_grads(%x: tensor<8x64xf32>, %dy: tensor<8x64xf32>) {
  // CHECK: dsnn.gelu_grad %{{.*}}, %{{.*}} : tensor<8x64xf32>
  %0 = dsnn.gelu_grad %x, %dy : tensor<8x64xf32>
  // CHECK: dsnn.gelu_grad %{{.*}}, %{{.*}} approximate tanh : tensor<8x64xf32>
  %1 = dsnn.gelu_grad %x, %dy approximate tanh : tensor<8x64xf32>
  // CHECK: dsnn.relu_grad %{{.*}}, %{{.*}} : tensor<8x64xf32>
  %2 = dsnn.relu_grad %x, %dy : tensor<8x64xf32>
  // CHECK: dsnn.silu_grad %{{.*}}, %{{.*}} : tensor<8x64xf32>
  %3 = dsnn.silu_grad %x, %dy : tensor<8x64xf32>
  // CHECK: dsnn.softmax_grad %{{.*}}, %{{.*}} dim -1 : tensor<8x64xf32>
  %4 = dsnn.softmax_grad %x, %dy dim -1 : tensor<8x64xf32>
  // CHECK: dsnn.log_softmax_grad %{{.*}}, %{{.*}} dim 1 : tensor<8x64xf32>
  %5 = dsnn.log_softmax_grad %x, %dy dim 1 : tensor<8x64xf32>
  return
}

// CHECK-LABEL: func @norm_grads
func.func @norm_grads(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xf32>) {
  // CHECK: = dsnn.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  %dx, %dw, %db = dsnn.layer_norm_grad %x, %w, %dy eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  // CHECK: = dsnn.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps 1.000000e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  %rx, %rw = dsnn.rms_norm_grad %x, %w, %dy eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>
  return
}

// CHECK-LABEL: func @attention_grad
func.func @attention_grad(%q: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x6xf32>, %do: tensor<2x4x8x6xf32>) {
  // CHECK: = dsnn.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x6xf32>, tensor<2x4x8x6xf32>
  %dq, %dk, %dv = dsnn.attention_grad %q, %q, %v, %do {causal} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x6xf32>, tensor<2x4x8x6xf32>
  return
}

// CHECK-LABEL: func @loss_and_embedding_grads
func.func @loss_and_embedding_grads(%l: tensor<2x8x50xf32>, %t: tensor<2x8xi64>, %g: tensor<f32>, %dy: tensor<2x8x16xf32>) {
  // CHECK: dsnn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x50xf32>, tensor<2x8xi64>, tensor<f32>
  %0 = dsnn.cross_entropy_grad %l, %t, %g : tensor<2x8x50xf32>, tensor<2x8xi64>, tensor<f32>
  // CHECK: dsnn.embedding_grad %{{.*}}, %{{.*}} : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<50x16xf32>
  %1 = dsnn.embedding_grad %t, %dy : tensor<2x8xi64>, tensor<2x8x16xf32> -> tensor<50x16xf32>
  return
}

// CHECK-LABEL: func @vocab_parallel_grads
func.func @vocab_parallel_grads(%l: tensor<2x8x25xf32>, %t: tensor<2x8xi64>, %g: tensor<f32>, %m: tensor<2x8xf32>, %o: tensor<1xi64>, %dy: tensor<2x8x16xf32>) {
  // CHECK: dsnn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} stats %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<f32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64>
  %0 = dsnn.cross_entropy_grad %l, %t, %g stats %m, %m offset %o : tensor<2x8x25xf32>, tensor<2x8xi64>, tensor<f32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<1xi64>
  // CHECK: dsnn.embedding_grad %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8xi64>, tensor<2x8x16xf32>, tensor<1xi64> -> tensor<25x16xf32>
  %1 = dsnn.embedding_grad %t, %dy offset %o : tensor<2x8xi64>, tensor<2x8x16xf32>, tensor<1xi64> -> tensor<25x16xf32>
  return
}
