// RUN: echo '{"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2, "gradient_clipping": 0, "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, "overlap_comm": false}, "tensor_parallel": {"autotp_size": 2}}' > %t.json
// RUN: ds-opt %ds_src/examples/models/gpt-tiny.mlir --ds-training-pipeline='config=%t.json world-size=4' | FileCheck %s --implicit-check-not='all_gather {{.*}}"tp"' --implicit-check-not='reduce_scatter {{.*}}"tp"'

// GPT-tiny at TP=2 x DP=2 with ZeRO-3: ds-tensor-parallel cuts first, then
// ds-zero chunks each piece over ["dp"] alone. The sharding's shape is the
// piece's (the tensor-parallel cut keeps the whole tensor's); the chunk is
// gathered over dp into the piece before its use, so the tp collectives
// are those of the pieces, and nothing is gathered or scattered over tp.
// (overlap_comm is off: the blocking collectives as ds-zero makes them.)

// CHECK:       module attributes {dsdist.grid = #dsdist.grid<dp = 2, tp = 2>}
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:    %[[WTE:[^:]*]]: tensor<256xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [32, 16]>, dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [64, 16]>, dsnn.param = #dsnn.param<name = "wte.weight"
// CHECK-SAME:    %[[QKV:[^:]*]]: tensor<192xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [24, 16]>, dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48, 16]>, dsnn.param = #dsnn.param<name = "h.0.attn.c_attn.weight"
// CHECK-SAME:    %[[PROJ:[^:]*]]: tensor<64xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [16, 8]>, dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [16, 16]>, dsnn.param = #dsnn.param<name = "h.0.attn.c_proj.weight"
// CHECK-SAME:    %[[PBIAS:[^:]*]]: tensor<8xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [16]>, dsnn.param = #dsnn.param<name = "h.0.attn.c_proj.bias"

// The vocabulary piece [32, 16] from its two dp chunks, then this rank's
// rows looked up and summed over tp.
// CHECK:         %[[G:.*]] = dsdist.all_gather %[[WTE]] over ["dp"] dim 0 {phase = "forward"} : tensor<256xf32> -> tensor<512xf32>
// CHECK-NEXT:    %[[W:.*]] = tensor.expand_shape %[[G]] {{.*}} : tensor<512xf32> into tensor<32x16xf32>
// CHECK-NEXT:    %[[E:.*]] = dsnn.embedding %{{.*}}, %[[W]] offset %{{.*}} : tensor<2x8xi64>, tensor<32x16xf32>, tensor<1xi64> -> tensor<2x8x16xf32>
// CHECK-NEXT:    dsdist.all_reduce sum %[[E]] over ["tp"] : tensor<2x8x16xf32>

// The QKV piece (3 blocks of this rank's head) and the row-parallel
// projection piece, each gathered over dp; g after the row linear; the
// replicated row bias is a dp chunk of the whole bias.
// CHECK:         %[[GQ:.*]] = dsdist.all_gather %[[QKV]] over ["dp"] dim 0 {phase = "forward"} : tensor<192xf32> -> tensor<384xf32>
// CHECK-NEXT:    %[[WQ:.*]] = tensor.expand_shape %[[GQ]] {{.*}} : tensor<384xf32> into tensor<24x16xf32>
// CHECK:         %[[GP:.*]] = dsdist.all_gather %[[PROJ]] over ["dp"] dim 0 {phase = "forward"} : tensor<64xf32> -> tensor<128xf32>
// CHECK-NEXT:    %[[WP:.*]] = tensor.expand_shape %[[GP]] {{.*}} : tensor<128xf32> into tensor<16x8xf32>
// CHECK-NEXT:    dsdist.all_gather %[[PBIAS]] over ["dp"] dim 0 {phase = "forward"} : tensor<8xf32> -> tensor<16xf32>
// CHECK:         dsnn.layer "h.0"
// CHECK:           dsnn.linear %{{.*}}, %[[WQ]], %{{.*}} : (tensor<2x8x16xf32>, tensor<24x16xf32>, tensor<24xf32>) -> tensor<2x8x24xf32>
// CHECK:           %[[PART:.*]] = dsnn.linear %{{.*}}, %[[WP]] : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:      dsdist.all_reduce sum %[[PART]] over ["tp"] : tensor<2x8x16xf32>
// CHECK:         dsdist.release %[[WP]] : tensor<16x8xf32>
// CHECK:         dsdist.release %[[WQ]] : tensor<24x16xf32>

// The backward gathers the chunks again, into pieces.
// CHECK:         %[[BQ:.*]] = dsdist.all_gather %[[QKV]] over ["dp"] dim 0 {phase = "backward"} : tensor<192xf32> -> tensor<384xf32>
// CHECK-NEXT:    tensor.expand_shape %[[BQ]] {{.*}} : tensor<384xf32> into tensor<24x16xf32>
// CHECK:         dsnn.layer "h.0.backward"
// CHECK:         dsnn.embedding_grad %{{.*}}, %{{.*}} offset %{{.*}} : tensor<2x8xi64>, tensor<2x8x16xf32>, tensor<1xi64> -> tensor<32x16xf32>

// The step: the pieces' gradients are reduce-scattered over dp into this
// rank's chunks (2024 elements: half of this rank's pieces and of the
// replicated parameters); the norm sums the pieces' squares over tp, then
// everything over dp; the loss is averaged over dp.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    tensor<256xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [32, 16]>, dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [64, 16]>
// CHECK-SAME:    tensor<256xf32> {dsdist.sharding = #dsdist.sharding<axes = ["dp"], shape = [32, 16]>, dstrain.state = {kind = "exp_avg", param = "wte.weight"}}
// CHECK:         dsdist.reduce_scatter avg %{{.*}} over ["dp"] dim 0 : tensor<2x2024xf32> -> tensor<1x2024xf32>
// CHECK:         %[[SQ:.*]] = dstrain.global_norm {{.*}} squared
// CHECK-NEXT:    %[[TP:.*]] = dsdist.all_reduce sum %[[SQ]] over ["tp"] : tensor<f32>
// CHECK-NEXT:    %[[ALL:.*]] = dstrain.global_norm {{.*}} squared init %[[TP]]
// CHECK-NEXT:    dsdist.all_reduce sum %[[ALL]] over ["dp"] : tensor<f32>
// CHECK:         dsdist.all_reduce avg %{{.*}} over ["dp"] : tensor<f32>
