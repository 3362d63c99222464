// What ds-pipeline-split refuses, one diagnostic each.
// RUN: ds-opt %s --split-input-file --verify-diagnostics --ds-pipeline-split="stages=3 stage=2 partition=uniform" -o /dev/null
// RUN: not ds-opt %s --split-input-file --ds-pipeline-split="stages=2 stage=2" 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: ds-pipeline-split: stage 2 is not one of the 2 stages (virtual-stages 1); use 0 <= stage < stages, virtual-stages >= 1
// RUN: not ds-opt %s --split-input-file --ds-pipeline-split="stages=2 partition=best" 2>&1 | FileCheck %s --check-prefix=METHOD
// METHOD: error: ds-pipeline-split: partition: must be "parameters", "uniform", "flops" or "type:REGEX", got "best"

// expected-error @+1 {{has no top-level dsnn.layer to cut into pipeline stages}}
func.func @forward(%w: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                   %x: tensor<2x4xf32> {dsnn.batch = "inputs"},
                   %y: tensor<2x4xf32> {dsnn.batch = "targets"}) -> tensor<f32> {
  %h = dsnn.linear %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = dsnn.mse_loss %h, %y : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
