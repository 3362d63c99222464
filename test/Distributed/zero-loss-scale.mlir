// An fp16 step (ds-loss-scale) sharded by ZeRO-2 at dp = 2: each rank
// checks its own gradients for inf/nan, and the skip is the OR over the
// group (an all-reduce max), so every rank skips the same steps.
// RUN: ds-opt %s --ds-loss-scale --ds-zero="stage=2 dp-size=2" --ds-verify-step-contract | FileCheck %s
// RUN: ds-opt %s --ds-loss-scale --ds-zero="stage=2 dp-size=1" | FileCheck %s --check-prefix=DP1 --implicit-check-not=dsdist.all_reduce

// CHECK-LABEL: func.func @train_step(
// CHECK:         %[[LOCAL:.*]] = dstrain.has_overflow
// CHECK-NEXT:    %[[F:.*]] = arith.uitofp %[[LOCAL]] : tensor<i1> to tensor<f32>
// CHECK-NEXT:    %[[ANY:.*]] = dsdist.all_reduce max %[[F]] over ["dp"] : tensor<f32>
// CHECK:         %[[OVF:.*]] = arith.cmpf ogt, %[[ANY]], %{{.*}} : tensor<f32>
// CHECK:         dsdist.reduce_scatter
// CHECK:         dstrain.adam {{.*}} skip %[[OVF]] : tensor<6xf32>, tensor<6xf32>
// CHECK:         dstrain.adam {{.*}} skip %[[OVF]] : tensor<3xf32>, tensor<3xf32>
// CHECK:         dstrain.loss_scale_update {{.*}} overflow %[[OVF]]
// DP1-LABEL: func.func @train_step(
// DP1:         %[[OVF:.*]] = dstrain.has_overflow
// DP1:         dstrain.adam {{.*}} skip %[[OVF]]
module {
  func.func @forward_backward(%w: tensor<4x3xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 2.0e-02>},
                              %b: tensor<5xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
                              %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
                              %x: tensor<2x3xf32>) -> (tensor<f32>, tensor<4x3xf32>, tensor<5xf32>) {
    %l = dsnn.reduce_sum %x dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    %ls = dsnn.grad_scale %l by %s : tensor<f32>, tensor<f32>
    %gw = dsnn.mul %w, %s : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
    %gb = dsnn.mul %b, %s : tensor<5xf32>, tensor<f32> -> tensor<5xf32>
    return %ls, %gw, %gb : tensor<f32>, tensor<4x3xf32>, tensor<5xf32>
  }

  func.func @train_step(%w: tensor<4x3xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 2.0e-02>},
                        %b: tensor<5xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
                        %mw: tensor<4x3xf32> {dstrain.state = {kind = "exp_avg", param = "fc.weight"}},
                        %vw: tensor<4x3xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.weight"}},
                        %mb: tensor<5xf32> {dstrain.state = {kind = "exp_avg", param = "fc.bias"}},
                        %vb: tensor<5xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.bias"}},
                        %s: tensor<f32> {dstrain.state = {kind = "loss_scale"}},
                        %step: tensor<i64> {dstrain.step},
                        %x: tensor<1x2x3xf32>)
      -> (tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
      attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
    %lr = arith.constant dense<1.0e-03> : tensor<f32>
    %xs = tensor.extract_slice %x[0, 0, 0] [1, 2, 3] [1, 1, 1] : tensor<1x2x3xf32> to tensor<2x3xf32>
    %r:3 = func.call @forward_backward(%w, %b, %s, %xs) : (tensor<4x3xf32>, tensor<5xf32>, tensor<f32>, tensor<2x3xf32>) -> (tensor<f32>, tensor<4x3xf32>, tensor<5xf32>)
    %c:2, %norm = dstrain.clip_grad_norm %r#1, %r#2 max_norm 1.0 : tensor<4x3xf32>, tensor<5xf32>
    %w1, %mw1, %vw1 = dstrain.adam %w, %c#0, %mw, %vw step %step lr %lr : tensor<4x3xf32>, tensor<4x3xf32>
    %b1, %mb1, %vb1 = dstrain.adam %b, %c#1, %mb, %vb step %step lr %lr : tensor<5xf32>, tensor<5xf32>
    return %w1, %b1, %mw1, %vw1, %mb1, %vb1, %r#0, %lr, %norm : tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}
