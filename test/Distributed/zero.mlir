// The step contract of a two-parameter model after ds-training-pipeline
// (AdamW, clipping at 1.0), rewritten by each ZeRO stage at dp = 2.
// RUN: ds-opt %s --ds-zero="stage=0 dp-size=2" | FileCheck %s --check-prefix=S0 --implicit-check-not=dsdist.reduce_scatter --implicit-check-not=dsdist.all_gather
// RUN: ds-opt %s --ds-zero="stage=1 dp-size=2" | FileCheck %s --check-prefix=S1 --implicit-check-not=dsdist.reduce_scatter
// RUN: ds-opt %s --ds-zero="stage=2 dp-size=2" | FileCheck %s --check-prefix=S2
// RUN: ds-opt %s --ds-zero="stage=3 dp-size=2 param-persistence-threshold=0" | FileCheck %s --check-prefix=S3
// RUN: ds-opt %s --ds-zero="stage=0 dp-size=2 reduce-bucket-size=8" | FileCheck %s --check-prefix=BUCKET
// RUN: ds-opt %s --ds-zero="stage=0 dp-size=2 pack-limit=10" | FileCheck %s --check-prefix=PACK0 --implicit-check-not=tensor.concat
// RUN: ds-opt %s --ds-zero="stage=2 dp-size=2 pack-limit=10" | FileCheck %s --check-prefix=PACK2 --implicit-check-not=tensor.concat
// RUN: not ds-opt %s --ds-zero="stage=2 dp-size=2 pack-limit=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PACKBAD
// RUN: ds-opt %s --ds-zero="stage=3 dp-size=1 param-persistence-threshold=0" | FileCheck %s --check-prefix=DP1 --implicit-check-not=dsdist.all
// RUN: ds-opt %s --ds-zero="stage=3 dp-size=2 param-persistence-threshold=0" --ds-verify-step-contract -o /dev/null

module {
  func.func @forward_backward(%w: tensor<4x3xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 2.0e-02>},
                              %b: tensor<5xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
                              %x: tensor<2x3xf32>) -> (tensor<f32>, tensor<4x3xf32>, tensor<5xf32>) {
    %h = dsnn.layer "fc"("Linear") -> tensor<2x4xf32> {
      %y = dsnn.matmul %x, %w {transpose_b} : tensor<2x3xf32>, tensor<4x3xf32> -> tensor<2x4xf32>
      dsnn.yield %y : tensor<2x4xf32>
    }
    %l = dsnn.reduce_sum %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    %g:2 = dsnn.layer "fc.backward"("Linear") -> tensor<4x3xf32>, tensor<5xf32> attributes {backward} {
      %gw = dsnn.mul %w, %l : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
      %gb = dsnn.mul %b, %l : tensor<5xf32>, tensor<f32> -> tensor<5xf32>
      dsnn.yield %gw, %gb : tensor<4x3xf32>, tensor<5xf32>
    }
    return %l, %g#0, %g#1 : tensor<f32>, tensor<4x3xf32>, tensor<5xf32>
  }

  func.func @train_step(%w: tensor<4x3xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 2.0e-02>},
                        %b: tensor<5xf32> {dsnn.param = #dsnn.param<name = "fc.bias", init = zeros>},
                        %mw: tensor<4x3xf32> {dstrain.state = {kind = "exp_avg", param = "fc.weight"}},
                        %vw: tensor<4x3xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.weight"}},
                        %mb: tensor<5xf32> {dstrain.state = {kind = "exp_avg", param = "fc.bias"}},
                        %vb: tensor<5xf32> {dstrain.state = {kind = "exp_avg_sq", param = "fc.bias"}},
                        %step: tensor<i64> {dstrain.step},
                        %x: tensor<1x2x3xf32>)
      -> (tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
      attributes {dstrain.gradient_accumulation_steps = 1 : i64} {
    %lr = arith.constant dense<1.0e-03> : tensor<f32>
    %xs = tensor.extract_slice %x[0, 0, 0] [1, 2, 3] [1, 1, 1] : tensor<1x2x3xf32> to tensor<2x3xf32>
    %r:3 = func.call @forward_backward(%w, %b, %xs) : (tensor<4x3xf32>, tensor<5xf32>, tensor<2x3xf32>) -> (tensor<f32>, tensor<4x3xf32>, tensor<5xf32>)
    %c:2, %norm = dstrain.clip_grad_norm %r#1, %r#2 max_norm 1.0 : tensor<4x3xf32>, tensor<5xf32>
    %w1, %mw1, %vw1 = dstrain.adam %w, %c#0, %mw, %vw step %step lr %lr : tensor<4x3xf32>, tensor<4x3xf32>
    %b1, %mb1, %vb1 = dstrain.adam %b, %c#1, %mb, %vb step %step lr %lr : tensor<5xf32>, tensor<5xf32>
    return %w1, %b1, %mw1, %vw1, %mb1, %vb1, %r#0, %lr, %norm : tensor<4x3xf32>, tensor<5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>, tensor<f32>
  }
}

// Stage 0: one bucket (both gradients packed), all-reduced; the norm from
// each rank's chunks, summed; the loss averaged.
// S0: module attributes {dsdist.grid = #dsdist.grid<dp = 2>}
// S0-LABEL: func.func @train_step
// S0: dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<17xf32>
// S0: %[[PART:.*]] = dstrain.global_norm %{{.*}}, %{{.*}} squared : tensor<6xf32>, tensor<3xf32>
// S0: %[[TOT:.*]] = dsdist.all_reduce sum %[[PART]] over ["dp"] : tensor<f32>
// S0: %[[NORM:.*]] = math.sqrt %[[TOT]] : tensor<f32>
// S0: dstrain.clip_grad_norm %{{.*}}, %{{.*}} max_norm 1.000000e+00 norm %[[NORM]] : tensor<4x3xf32>, tensor<5xf32>
// S0: dstrain.adam %arg0, {{.*}} : tensor<4x3xf32>, tensor<4x3xf32>
// S0: dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<f32>

// Stage 1: gradients still all-reduced, state sharded (5 elements pad to 6),
// each rank updates its chunk, new parameters all-gathered.
// S1-LABEL: func.func @train_step
// S1-SAME: tensor<6xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [4, 3]>, dstrain.state = {kind = "exp_avg", param = "fc.weight"}}
// S1-SAME: tensor<3xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [5]>, dstrain.state = {kind = "exp_avg", param = "fc.bias"}}
// S1: dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<17xf32>
// S1: tensor.pad
// S1: dsdist.shard %{{.*}} over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
// S1: dstrain.adam {{.*}} : tensor<6xf32>, tensor<6xf32>
// S1: dstrain.adam {{.*}} : tensor<3xf32>, tensor<3xf32>
// S1: dsdist.all_gather %{{.*}} over ["dp"] dim 0 : tensor<1x9xf32> -> tensor<2x9xf32>
// S1: return {{.*}} : tensor<4x3xf32>, tensor<5xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<f32>

// Stage 2: gradients reduce-scattered in one [2, 9] bucket; no full
// reduced gradient exists.
// S2-LABEL: func.func @train_step
// S2-NOT: dsdist.all_reduce avg %{{.*}} : tensor<17xf32>
// S2: dsdist.reduce_scatter avg %{{.*}} over ["dp"] dim 0 : tensor<2x9xf32> -> tensor<1x9xf32>
// S2: dstrain.clip_grad_norm {{.*}} norm %{{.*}} : tensor<6xf32>, tensor<3xf32>
// S2: dsdist.all_gather %{{.*}} over ["dp"] dim 0 : tensor<1x9xf32> -> tensor<2x9xf32>

// Stage 3: parameters are chunks too; @forward_backward gathers each
// before its forward use and again before its backward use, releasing
// after the last use of each phase; the step returns chunks, ungathered.
// S3-LABEL: func.func @forward_backward
// S3-SAME: %arg0: tensor<6xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [4, 3]>
// S3: %[[WF:.*]] = dsdist.all_gather %arg0 over ["dp"] dim 0 {phase = "forward"} : tensor<6xf32> -> tensor<12xf32>
// S3: dsnn.layer "fc"
// S3: dsdist.release
// S3: %[[WB:.*]] = dsdist.all_gather %arg0 over ["dp"] dim 0 {phase = "backward"} : tensor<6xf32> -> tensor<12xf32>
// S3: dsdist.all_gather %arg1 over ["dp"] dim 0 {phase = "backward"} : tensor<3xf32> -> tensor<6xf32>
// S3: dsnn.layer "fc.backward"
// S3: dsdist.release
// S3: dsdist.release
// S3-LABEL: func.func @train_step
// S3: dsdist.reduce_scatter avg
// S3-NOT: dsdist.all_gather
// S3: return {{.*}} : tensor<6xf32>, tensor<3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<f32>

// A bucket limit of 8 elements puts each gradient in its own collective,
// the last parameter's first.
// BUCKET-LABEL: func.func @train_step
// BUCKET: dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<5xf32>
// BUCKET: dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<4x3xf32>

// A gradient of at least pack-limit elements (at stage 2, a chunk of at
// least pack-limit / N) is reduced in its own buffer, never copied into a
// bucket; so, here, is the bias, the one small gradient left.
// PACK0-LABEL: func.func @train_step
// PACK0: dsdist.all_reduce avg %0#2 over ["dp"] : tensor<5xf32>
// PACK0: dsdist.all_reduce avg %0#1 over ["dp"] : tensor<4x3xf32>
// PACK2-LABEL: func.func @train_step
// PACK2: dsdist.reduce_scatter avg %{{.*}} over ["dp"] dim 0 : tensor<6xf32> -> tensor<3xf32>
// PACK2: dsdist.reduce_scatter avg %{{.*}} over ["dp"] dim 0 : tensor<12xf32> -> tensor<6xf32>
// PACK2: dsdist.all_gather %{{.*}} over ["dp"] dim 0 : tensor<3xf32> -> tensor<6xf32>
// PACK2: dsdist.all_gather %{{.*}} over ["dp"] dim 0 : tensor<6xf32> -> tensor<12xf32>
// PACKBAD: error: ds-zero: dp-size, reduce-bucket-size, allgather-bucket-size and pack-limit must be >= 1

// One rank: nothing to communicate.
// DP1: module attributes {dsdist.grid = #dsdist.grid<dp = 1>}
