// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%S/Inputs/bf16-zero2.json world-size=2' | FileCheck %s --implicit-check-not='all_gather {{.*}}xf32>'

// bf16 with ZeRO-2 on two ranks keeps DeepSpeed's layout: the parameters
// are bf16 on every rank (what the forward reads, with no casts left), each
// rank holds its chunk of the f32 master copy as optimizer state, the
// update writes the master chunk and its bf16 rounding, and one bucketed
// all-gather spreads the bf16 chunks.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      %{{[^:]*}}: tensor<64x16xbf16> {dsnn.param
// CHECK-SAME:      -> (tensor<f32>, tensor<64x16xf32>,
// CHECK-NOT:     dsnn.cast %arg0
// CHECK:         dsnn.embedding %{{.*}}, %arg0
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %{{[^:]*}}: tensor<64x16xbf16> {dsnn.param = #dsnn.param<name = "wte.weight"
// CHECK-SAME:      {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [64, 16]>, dstrain.state = {kind = "exp_avg", param = "wte.weight"}}
// CHECK-SAME:      %[[M0:[^:]*]]: tensor<512xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [64, 16]>, dstrain.state = {kind = "master", param = "wte.weight"}}
// CHECK-SAME:      -> (tensor<64x16xbf16>,
// CHECK:         dsdist.reduce_scatter
// CHECK:         %[[NEW:[^,]*]], %{{.*}} = dstrain.adam %[[M0]], {{.*}} : tensor<512xf32>, tensor<512xf32>
// CHECK-NEXT:    dsnn.cast %[[NEW]] : tensor<512xf32> -> tensor<512xbf16>
// CHECK:         dsdist.all_gather {{.*}} : tensor<1x3872xbf16> -> tensor<2x3872xbf16>
// CHECK:         return
