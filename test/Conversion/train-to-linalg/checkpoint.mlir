// RUN: ds-opt %s --ds-lower-train-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// Checkpoint ops are lowered by the runtime lowering: they stay, and the
// pass succeeds.
// CHECK-LABEL: func @checkpoint_ops_stay
// CHECK:         %[[W:.*]] = dstrain.checkpoint_load ["w"] tag "global_step1" : tensor<8xf32>
// CHECK:         dstrain.checkpoint_save %[[W]] ["w"] tag "global_step2" : tensor<8xf32>
func.func @checkpoint_ops_stay() -> tensor<8xf32> {
  %w = dstrain.checkpoint_load ["w"] tag "global_step1" : tensor<8xf32>
  dstrain.checkpoint_save %w ["w"] tag "global_step2" : tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// Dynamic shapes are not lowered; the op is named.
func.func @dynamic_norm(%g: tensor<?xf32>) -> tensor<f32> {
  // expected-error @+1 {{'dstrain.global_norm' has a dynamic shape; ds-lower-train-to-linalg lowers static shapes only}}
  %n = dstrain.global_norm %g : tensor<?xf32>
  return %n : tensor<f32>
}
