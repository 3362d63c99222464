// RUN: ds-opt %s --ds-tensor-parallel="size=2 dp-size=2 sequence-parallel=true" | FileCheck %s
// RUN: ds-opt %s --ds-tensor-parallel="size=2 dp-size=2 sequence-parallel=true" --ds-autodiff | FileCheck %s --check-prefix=GRAD --implicit-check-not=dsdist.copy_to_group
// RUN: ds-opt %s --ds-tensor-parallel="size=2 dp-size=2 sequence-parallel=true" --ds-autodiff | sed -n '/@forward_backward/,$p' | grep -c 'dsdist.all_gather' | FileCheck %s --check-prefix=GATHERS
// RUN: ds-opt %s --ds-tensor-parallel="size=2 dp-size=2 sequence-parallel=true" --ds-autodiff | sed -n '/@forward_backward/,$p' | grep -c 'dsdist.all_reduce sum %[a-z_0-9]* over \["tp"\] : tensor<16xf32>' | FileCheck %s --check-prefix=PARAMS
// RUN: ds-opt %s --ds-tensor-parallel="size=2 dp-size=2 sequence-parallel=true" --ds-autodiff | sed -n '/@forward_backward/,$p' | grep -c 'dsdist.all_reduce sum %[a-z_0-9]* over \["tp"\] : tensor<8x16xf32>' | FileCheck %s --check-prefix=TABLE

// Megatron sequence parallelism on a one-block GPT (C = 16, 2 heads, MLP
// width 32, a tied vocabulary of 64, 8 positions) over a tensor-parallel
// group of two ranks. The layout is tensor-parallel.mlir's; between the
// blocks each rank holds 4 of the 8 positions. The embedding's sum and each
// row linear's g become a reduce-scatter along the sequence, each column
// linear's f (and the LM head's) an all-gather along it. Collectives lower
// along a leading dim, so the sequence goes to the front and back. The
// position table is looked up at this rank's positions, and every
// replicated parameter read on a shard (position table, norms, row biases)
// goes through copy_to_group, whose VJP sums its gradient over tp.

// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[WTE:[^:]*]]: tensor<32x16xf32>
// CHECK-SAME:    %[[WPE:[^:]*]]: tensor<8x16xf32>
// CHECK-SAME:    %[[LNW:[^:]*]]: tensor<16xf32>
// CHECK-SAME:    %[[LNB:[^:]*]]: tensor<16xf32>
// CHECK-SAME:    %[[PB:[^:]*]]: tensor<16xf32> {dsnn.param = #dsnn.param<name = "attn.c_proj.bias"
// CHECK-SAME:    %[[MPB:[^:]*]]: tensor<16xf32> {dsnn.param = #dsnn.param<name = "mlp.c_proj.bias"
// CHECK:         %[[TOK:.*]] = dsnn.embedding %{{.*}}, %[[WTE]] offset
// CHECK-NEXT:    %[[TOKT:.*]] = dsnn.transpose %[[TOK]] perm [1, 0, 2] : tensor<2x8x16xf32> -> tensor<8x2x16xf32>
// CHECK-NEXT:    %[[TOKS:.*]] = dsdist.reduce_scatter sum %[[TOKT]] over ["tp"] dim 0 : tensor<8x2x16xf32> -> tensor<4x2x16xf32>
// CHECK-NEXT:    %[[TOKB:.*]] = dsnn.transpose %[[TOKS]] perm [1, 0, 2] : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[POS:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
// CHECK-NEXT:    %[[MYPOS:.*]] = dsdist.shard %[[POS]] over ["tp"] dim 0 : tensor<8xi64> -> tensor<4xi64>
// CHECK-NEXT:    %[[WPEF:.*]] = dsdist.copy_to_group %[[WPE]] over ["tp"] : tensor<8x16xf32>
// CHECK-NEXT:    %[[PE:.*]] = dsnn.embedding %[[MYPOS]], %[[WPEF]] : tensor<4xi64>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:    %[[H0:.*]] = dsnn.add %[[TOKB]], %[[PE]] : tensor<2x4x16xf32>, tensor<4x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[LNWF:.*]] = dsdist.copy_to_group %[[LNW]] over ["tp"] : tensor<16xf32>
// CHECK-NEXT:    %[[LNBF:.*]] = dsdist.copy_to_group %[[LNB]] over ["tp"] : tensor<16xf32>
// CHECK-NEXT:    %[[LN:.*]] = dsnn.layer_norm %[[H0]], %[[LNWF]], %[[LNBF]] {{.*}} : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[LNT:.*]] = dsnn.transpose %[[LN]] perm [1, 0, 2] : tensor<2x4x16xf32> -> tensor<4x2x16xf32>
// CHECK-NEXT:    %[[ALL:.*]] = dsdist.all_gather %[[LNT]] over ["tp"] dim 0 : tensor<4x2x16xf32> -> tensor<8x2x16xf32>
// CHECK-NEXT:    %[[X:.*]] = dsnn.transpose %[[ALL]] perm [1, 0, 2] : tensor<8x2x16xf32> -> tensor<2x8x16xf32>
// CHECK-NEXT:    dsnn.linear %[[X]], {{.*}} -> tensor<2x8x24xf32>
// CHECK:         dsnn.attention {{.*}} -> tensor<2x1x8x8xf32>
// CHECK:         %[[PART:.*]] = dsnn.linear %{{.*}} : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %[[PT:.*]] = dsnn.transpose %[[PART]] perm [1, 0, 2]
// CHECK-NEXT:    %[[RS:.*]] = dsdist.reduce_scatter sum %[[PT]] over ["tp"] dim 0 : tensor<8x2x16xf32> -> tensor<4x2x16xf32>
// CHECK-NEXT:    %[[RSB:.*]] = dsnn.transpose %[[RS]] perm [1, 0, 2] : tensor<4x2x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[PBF:.*]] = dsdist.copy_to_group %[[PB]] over ["tp"] : tensor<16xf32>
// CHECK-NEXT:    %[[PROJ:.*]] = dsnn.add %[[RSB]], %[[PBF]] : tensor<2x4x16xf32>, tensor<16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[RES:.*]] = dsnn.add %[[H0]], %[[PROJ]] : tensor<2x4x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    %[[RT:.*]] = dsnn.transpose %[[RES]] perm [1, 0, 2]
// CHECK-NEXT:    %[[ALL2:.*]] = dsdist.all_gather %[[RT]] over ["tp"] dim 0 : tensor<4x2x16xf32> -> tensor<8x2x16xf32>
// CHECK-NEXT:    %[[X2:.*]] = dsnn.transpose %[[ALL2]] perm [1, 0, 2]
// CHECK-NEXT:    dsnn.linear %[[X2]], {{.*}} -> tensor<2x8x16xf32>
// CHECK-NEXT:    dsnn.gelu
// CHECK-NEXT:    %[[PART2:.*]] = dsnn.linear
// CHECK-NEXT:    %[[PT2:.*]] = dsnn.transpose %[[PART2]] perm [1, 0, 2]
// CHECK-NEXT:    dsdist.reduce_scatter sum %[[PT2]] over ["tp"] dim 0 : tensor<8x2x16xf32> -> tensor<4x2x16xf32>
// CHECK-NEXT:    %[[RSB2:.*]] = dsnn.transpose
// CHECK-NEXT:    %[[MPBF:.*]] = dsdist.copy_to_group %[[MPB]] over ["tp"] : tensor<16xf32>
// CHECK-NEXT:    dsnn.add %[[RSB2]], %[[MPBF]] : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[RES2:.*]] = dsnn.add %[[RES]], %{{.*}} : tensor<2x4x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
// CHECK-NEXT:    dsdist.copy_to_group
// CHECK-NEXT:    dsdist.copy_to_group
// CHECK-NEXT:    %[[LNF:.*]] = dsnn.layer_norm %[[RES2]], {{.*}} : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[LNFT:.*]] = dsnn.transpose %[[LNF]] perm [1, 0, 2]
// CHECK-NEXT:    %[[ALL3:.*]] = dsdist.all_gather %[[LNFT]] over ["tp"] dim 0 : tensor<4x2x16xf32> -> tensor<8x2x16xf32>
// CHECK-NEXT:    %[[X3:.*]] = dsnn.transpose %[[ALL3]] perm [1, 0, 2]
// CHECK-NEXT:    dsnn.linear %[[X3]], %[[WTE]] : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
// No all-reduce of activations is left: only the loss's statistics, one
// value per position.
// CHECK-NOT:     dsdist.all_reduce sum %{{.*}} : tensor<2x8x16xf32>
// CHECK:         dsdist.all_reduce max %{{.*}} over ["tp"] : tensor<2x8xf32>
// CHECK-NOT:     dsdist.all_reduce sum %{{.*}} : tensor<2x8x16xf32>
// CHECK:         return

// The backward: each all-gather's VJP is a reduce-scatter (two columns and
// the head), each reduce-scatter's an all-gather (two rows and the
// embedding), so @forward_backward holds six of each, and no f is left.
// The gradients of the replicated parameters read on a shard are summed
// over tp: ln_1's and ln_f's weights and biases and the two row biases
// ([16] each), and the position table ([8, 16]).
// GRAD-LABEL: func.func @forward_backward(
// GRAD-COUNT-6: dsdist.reduce_scatter sum %{{.*}} over ["tp"] dim 0 : tensor<8x2x16xf32> -> tensor<4x2x16xf32>
// GRAD-NOT:     dsdist.reduce_scatter
// GRAD:         return
// GATHERS: 6
// PARAMS: 6
// TABLE: 1
module {
  func.func @forward(
    %wte: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02, tied = "wte">},
    %wpe: tensor<8x16xf32> {dsnn.param = #dsnn.param<name = "wpe.weight", init = normal, std = 0.02>},
    %ln_w: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_1.weight", init = ones>},
    %ln_b: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_1.bias", init = zeros>},
    %qkv_w: tensor<48x16xf32> {dsnn.param = #dsnn.param<name = "attn.c_attn.weight", init = normal, std = 0.02>},
    %qkv_b: tensor<48xf32> {dsnn.param = #dsnn.param<name = "attn.c_attn.bias", init = zeros>},
    %p_w: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "attn.c_proj.weight", init = normal, std = 0.02>},
    %p_b: tensor<16xf32> {dsnn.param = #dsnn.param<name = "attn.c_proj.bias", init = zeros>},
    %fc_w: tensor<32x16xf32> {dsnn.param = #dsnn.param<name = "mlp.c_fc.weight", init = normal, std = 0.02>},
    %fc_b: tensor<32xf32> {dsnn.param = #dsnn.param<name = "mlp.c_fc.bias", init = zeros>},
    %mp_w: tensor<16x32xf32> {dsnn.param = #dsnn.param<name = "mlp.c_proj.weight", init = normal, std = 0.02>},
    %mp_b: tensor<16xf32> {dsnn.param = #dsnn.param<name = "mlp.c_proj.bias", init = zeros>},
    %lnf_w: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_f.weight", init = ones>},
    %lnf_b: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_f.bias", init = zeros>},
    %ids: tensor<2x8xi64> {dsnn.batch = "input_ids"},
    %targets: tensor<2x8xi64> {dsnn.batch = "targets"}) -> tensor<f32> {
    %tok = dsnn.embedding %ids, %wte : tensor<2x8xi64>, tensor<64x16xf32> -> tensor<2x8x16xf32>
    %positions = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi64>
    %pos = dsnn.embedding %positions, %wpe : tensor<8xi64>, tensor<8x16xf32> -> tensor<8x16xf32>
    %h0 = dsnn.add %tok, %pos : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
    %ln1 = dsnn.layer_norm %h0, %ln_w, %ln_b eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %qkv = dsnn.linear %ln1, %qkv_w, %qkv_b : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %q, %k, %v = dsnn.split %qkv dim 2 : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
    %q4 = dsnn.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %k4 = dsnn.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %v4 = dsnn.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %att = dsnn.attention %qh, %kh, %vh {causal} : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x2x8x8xf32>
    %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<2x2x8x8xf32> -> tensor<2x8x2x8xf32>
    %attC = dsnn.reshape %attT : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
    %proj = dsnn.linear %attC, %p_w, %p_b : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %res1 = dsnn.add %h0, %proj : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %fc = dsnn.linear %res1, %fc_w, %fc_b : (tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
    %act = dsnn.gelu %fc : tensor<2x8x32xf32>
    %mlp = dsnn.linear %act, %mp_w, %mp_b : (tensor<2x8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %res2 = dsnn.add %res1, %mlp : tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>
    %lnf = dsnn.layer_norm %res2, %lnf_w, %lnf_b eps 1.0e-05 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    %logits = dsnn.linear %lnf, %wte : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
    %loss = dsnn.cross_entropy %logits, %targets : tensor<2x8x64xf32>, tensor<2x8xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
