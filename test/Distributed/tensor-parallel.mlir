// RUN: ds-opt %s --split-input-file --ds-tensor-parallel="size=2 dp-size=2" | FileCheck %s
// RUN: ds-opt %s --split-input-file --ds-tensor-parallel="size=2 dp-size=2" --ds-autodiff | FileCheck %s --check-prefix=GRAD --implicit-check-not=dsdist.copy_to_group

// A GPT-2 block (C = 16, 2 heads, fused QKV, MLP width 32) and an untied LM
// head, over a tensor-parallel group of two ranks. Megatron's layout, found
// on the graph: QKV column-parallel by heads (each rank holds its head's Q,
// K and V rows: 3 blocks), the attention output projection row-parallel,
// the MLP's fc column- and proj row-parallel; f (copy_to_group) before each
// column linear, g (all_reduce sum) after each row linear, then the row
// bias once. Layer norms and row biases stay whole. The LM head is
// vocabulary-parallel: each rank holds 32 of the 64 vocabulary rows and
// computes only their logits; the cross-entropy takes the row max, the
// Σ exp and the target logit over the group, so no [.., 64] logits exist.

// CHECK:       module attributes {dsdist.grid = #dsdist.grid<dp = 2, tp = 2>}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[LNW:[^:]*]]: tensor<16xf32> {dsnn.param = #dsnn.param<name = "ln_1.weight"
// CHECK-SAME:    %[[QKVW:[^:]*]]: tensor<24x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48, 16]>, dsnn.param = #dsnn.param<name = "attn.c_attn.weight"
// CHECK-SAME:    %[[QKVB:[^:]*]]: tensor<24xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 3, shape = [48]>
// CHECK-SAME:    %[[PW:[^:]*]]: tensor<16x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [16, 16]>
// CHECK-SAME:    %[[PB:[^:]*]]: tensor<16xf32> {dsnn.param = #dsnn.param<name = "attn.c_proj.bias"
// CHECK-SAME:    %[[FCW:[^:]*]]: tensor<16x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [32, 16]>
// CHECK-SAME:    %[[FCB:[^:]*]]: tensor<16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [32]>
// CHECK-SAME:    %[[MPW:[^:]*]]: tensor<16x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [16, 32]>
// CHECK-SAME:    %[[MPB:[^:]*]]: tensor<16xf32> {dsnn.param = #dsnn.param<name = "mlp.c_proj.bias"
// CHECK-SAME:    %[[HEAD:[^:]*]]: tensor<32x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [64, 16]>, dsnn.param = #dsnn.param<name = "lm_head.weight"
// CHECK-SAME:    %[[T:[^:]*]]: tensor<2x8xi64>
// CHECK:         %[[LN:.*]] = dsnn.layer_norm
// CHECK-NEXT:    %[[F:.*]] = dsdist.copy_to_group %[[LN]] over ["tp"] : tensor<2x8x16xf32>
// CHECK-NEXT:    %[[QKV:.*]] = dsnn.linear %[[F]], %[[QKVW]], %[[QKVB]] : {{.*}} -> tensor<2x8x24xf32>
// CHECK-NEXT:    %[[S:.*]]:3 = dsnn.split %[[QKV]] dim 2 : tensor<2x8x24xf32> -> tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>
// CHECK:         dsnn.reshape %[[S]]#0 : tensor<2x8x8xf32> -> tensor<2x8x1x8xf32>
// CHECK:         %[[ATT:.*]] = dsnn.attention {{.*}} : tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x1x8x8xf32>
// CHECK:         %[[CAT:.*]] = dsnn.reshape {{.*}} : tensor<2x8x1x8xf32> -> tensor<2x8x8xf32>
// CHECK-NEXT:    %[[PART:.*]] = dsnn.linear %[[CAT]], %[[PW]] : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %[[G:.*]] = dsdist.all_reduce sum %[[PART]] over ["tp"] : tensor<2x8x16xf32>
// CHECK-NEXT:    %[[PROJ:.*]] = dsnn.add %[[G]], %[[PB]]
// CHECK-NEXT:    %[[RES:.*]] = dsnn.add %{{.*}}, %[[PROJ]]
// CHECK-NEXT:    %[[F2:.*]] = dsdist.copy_to_group %[[RES]] over ["tp"]
// CHECK-NEXT:    %[[FC:.*]] = dsnn.linear %[[F2]], %[[FCW]], %[[FCB]] : {{.*}} -> tensor<2x8x16xf32>
// CHECK-NEXT:    %[[ACT:.*]] = dsnn.gelu %[[FC]] : tensor<2x8x16xf32>
// CHECK-NEXT:    %[[PART2:.*]] = dsnn.linear %[[ACT]], %[[MPW]] : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %[[G2:.*]] = dsdist.all_reduce sum %[[PART2]] over ["tp"]
// CHECK-NEXT:    dsnn.add %[[G2]], %[[MPB]]
// CHECK:         %[[RES2:.*]] = dsnn.add
// CHECK-NEXT:    %[[F3:.*]] = dsdist.copy_to_group %[[RES2]] over ["tp"]
// CHECK-NEXT:    %[[LOG:.*]] = dsnn.linear %[[F3]], %[[HEAD]] : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
// CHECK-NEXT:    %[[STARTS:.*]] = arith.constant dense<[0, 32]> : tensor<2xi64>
// CHECK-NEXT:    %[[OFF:.*]] = dsdist.shard %[[STARTS]] over ["tp"] dim 0 : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT:    %[[MLOC:.*]] = dsnn.reduce_max %[[LOG]] dims [2] : tensor<2x8x32xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[MAX:.*]] = dsdist.all_reduce max %[[MLOC]] over ["tp"] : tensor<2x8xf32>
// CHECK-NEXT:    %[[SL:.*]], %[[PL:.*]] = dsnn.cross_entropy_parts %[[LOG]], %[[T]], %[[MAX]] offset %[[OFF]]
// CHECK-NEXT:    %[[S:.*]] = dsdist.all_reduce sum %[[SL]] over ["tp"] : tensor<2x8xf32>
// CHECK-NEXT:    %[[P:.*]] = dsdist.all_reduce sum %[[PL]] over ["tp"] : tensor<2x8xf32>
// CHECK-NEXT:    dsnn.cross_entropy %[[LOG]], %[[T]] stats %[[MAX]], %[[S]], %[[P]] offset %[[OFF]]

// The backward: f's cotangent is all-reduced (the input's gradient sums
// the ranks' partial ones), g's passes through, and f is gone. The loss's
// gradient is this rank's piece of softmax − onehot, from the group's
// statistics; the head's f then sums the ranks' partial input gradients.
// GRAD-LABEL: func.func @forward_backward(
// GRAD-COUNT-2: dsdist.all_reduce sum %{{.*}} over ["tp"] : tensor<2x8x16xf32>
// GRAD:         %[[MAX:.*]] = dsdist.all_reduce max
// GRAD:         %[[S:.*]] = dsdist.all_reduce sum %sum_exp
// GRAD:         dsnn.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} stats %[[MAX]], %[[S]] offset %{{.*}} : tensor<2x8x32xf32>
// GRAD-COUNT-3: dsdist.all_reduce sum %{{.*}} over ["tp"] : tensor<2x8x16xf32>
// GRAD-NOT:     dsdist.all_reduce
// GRAD:         return
module {
  func.func @forward(
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
    %head: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "lm_head.weight", init = normal, std = 0.02>},
    %h0: tensor<2x8x16xf32>, %targets: tensor<2x8xi64>) -> tensor<f32> {
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
    %logits = dsnn.linear %res2, %head : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
    %loss = dsnn.cross_entropy %logits, %targets : tensor<2x8x64xf32>, tensor<2x8xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// A SwiGLU MLP (Llama): gate and up both column-parallel, their product on
// each rank's half of the width, down row-parallel. The two columns read
// one input: one f, whose backward all-reduce sums both partial gradients.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[GATE:[^:]*]]: tensor<12x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [24, 8]>
// CHECK-SAME:    %[[UP:[^:]*]]: tensor<12x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [24, 8]>
// CHECK-SAME:    %[[DOWN:[^:]*]]: tensor<8x12xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [8, 24]>
// CHECK:         %[[F:.*]] = dsdist.copy_to_group %{{.*}} over ["tp"] : tensor<4x8xf32>
// CHECK-NEXT:    %[[G:.*]] = dsnn.linear %[[F]], %[[GATE]] : (tensor<4x8xf32>, tensor<12x8xf32>) -> tensor<4x12xf32>
// CHECK-NEXT:    %[[A:.*]] = dsnn.silu %[[G]] : tensor<4x12xf32>
// CHECK-NEXT:    %[[U:.*]] = dsnn.linear %[[F]], %[[UP]] : (tensor<4x8xf32>, tensor<12x8xf32>) -> tensor<4x12xf32>
// CHECK-NEXT:    %[[M:.*]] = dsnn.mul %[[A]], %[[U]] : tensor<4x12xf32>, tensor<4x12xf32> -> tensor<4x12xf32>
// CHECK-NEXT:    %[[D:.*]] = dsnn.linear %[[M]], %[[DOWN]] : (tensor<4x12xf32>, tensor<8x12xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    dsdist.all_reduce sum %[[D]] over ["tp"] : tensor<4x8xf32>
// GRAD-LABEL: func.func @forward_backward(
// GRAD-COUNT-2: dsdist.all_reduce sum %{{.*}} over ["tp"] : tensor<4x8xf32>
// GRAD-NOT:     dsdist.all_reduce
// GRAD:         return
module {
  func.func @forward(
    %gate: tensor<24x8xf32> {dsnn.param = #dsnn.param<name = "mlp.gate_proj.weight", init = normal, std = 0.02>},
    %up: tensor<24x8xf32> {dsnn.param = #dsnn.param<name = "mlp.up_proj.weight", init = normal, std = 0.02>},
    %down: tensor<8x24xf32> {dsnn.param = #dsnn.param<name = "mlp.down_proj.weight", init = normal, std = 0.02>},
    %norm: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "norm.weight", init = ones>},
    %x0: tensor<4x8xf32>) -> tensor<f32> {
    %x = dsnn.mul %x0, %norm : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    %g = dsnn.linear %x, %gate : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
    %a = dsnn.silu %g : tensor<4x24xf32>
    %u = dsnn.linear %x, %up : (tensor<4x8xf32>, tensor<24x8xf32>) -> tensor<4x24xf32>
    %m = dsnn.mul %a, %u : tensor<4x24xf32>, tensor<4x24xf32> -> tensor<4x24xf32>
    %d = dsnn.linear %m, %down : (tensor<4x24xf32>, tensor<8x24xf32>) -> tensor<4x8xf32>
    %s = dsnn.reduce_sum %d dims [0, 1] : tensor<4x8xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A Llama attention block: RoPE and grouped-query attention (4 query heads,
// 2 KV heads of 4 dims, a batch of 1). Each rank holds 2 query heads and
// their KV head. RoPE acts on each head alone: the cos/sin tables [T, D]
// broadcast along heads and stay whole, and rotate_half's split, neg and
// concat run along head_dim. GQA's repeat (a reshape, the add of zeros
// [H/KV, T, D] and a reshape back) keeps each rank's KV head next to its
// query heads.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[WQ:[^:]*]]: tensor<8x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [16, 8]>
// CHECK-SAME:    %[[WK:[^:]*]]: tensor<4x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [8, 8]>
// CHECK-SAME:    %[[WV:[^:]*]]: tensor<4x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [8, 8]>
// CHECK-SAME:    %[[WO:[^:]*]]: tensor<8x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [8, 16]>
// CHECK:         %[[F:.*]] = dsdist.copy_to_group %{{.*}} over ["tp"] : tensor<1x3x8xf32>
// CHECK:         %[[COS:.*]] = arith.constant dense<1.000000e+00> : tensor<3x4xf32>
// CHECK:         %[[Q:.*]] = dsnn.linear %[[F]], %[[WQ]] : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
// CHECK-NEXT:    %[[Q4:.*]] = dsnn.reshape %[[Q]] : tensor<1x3x8xf32> -> tensor<1x3x2x4xf32>
// CHECK-NEXT:    %[[QH:.*]] = dsnn.transpose %[[Q4]] perm [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %[[QS:.*]]:2 = dsnn.split %[[QH]] dim 3 : tensor<1x2x3x4xf32> -> tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
// CHECK-NEXT:    %[[QN:.*]] = dsnn.neg %[[QS]]#1 : tensor<1x2x3x2xf32>
// CHECK-NEXT:    %[[QT:.*]] = dsnn.concat %[[QN]], %[[QS]]#0 dim 3 : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %[[QC:.*]] = dsnn.mul %[[QH]], %[[COS]] : tensor<1x2x3x4xf32>, tensor<3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK:         %[[K:.*]] = dsnn.linear %[[F]], %[[WK]] : (tensor<1x3x8xf32>, tensor<4x8xf32>) -> tensor<1x3x4xf32>
// CHECK:         %[[K5:.*]] = dsnn.reshape %{{.*}} : tensor<1x1x3x4xf32> -> tensor<1x1x1x3x4xf32>
// CHECK-NEXT:    %[[KE:.*]] = dsnn.add %[[K5]], %{{.*}} : tensor<1x1x1x3x4xf32>, tensor<2x3x4xf32> -> tensor<1x1x2x3x4xf32>
// CHECK-NEXT:    %[[KK:.*]] = dsnn.reshape %[[KE]] : tensor<1x1x2x3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK:         %[[V:.*]] = dsnn.linear %[[F]], %[[WV]] : (tensor<1x3x8xf32>, tensor<4x8xf32>) -> tensor<1x3x4xf32>
// CHECK:         %[[ATT:.*]] = dsnn.attention %{{.*}}, %[[KK]], %{{.*}} {causal} : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK:         %[[Y:.*]] = dsnn.reshape %{{.*}} : tensor<1x3x2x4xf32> -> tensor<1x3x8xf32>
// CHECK-NEXT:    %[[O:.*]] = dsnn.linear %[[Y]], %[[WO]] : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
// CHECK-NEXT:    dsdist.all_reduce sum %[[O]] over ["tp"] : tensor<1x3x8xf32>
// The backward: %x needs no gradient, so the shared f adds no all-reduce,
// and the constant tables get no cotangent to reduce: g is the only one.
// GRAD-LABEL: func.func @forward_backward(
// GRAD:         dsdist.all_reduce sum %{{.*}} over ["tp"] : tensor<1x3x8xf32>
// GRAD-NOT:     dsdist.all_reduce
// GRAD:         return
module {
  func.func @forward(
    %wq: tensor<16x8xf32> {dsnn.param = #dsnn.param<name = "self_attn.q_proj.weight", init = normal, std = 0.02>},
    %wk: tensor<8x8xf32> {dsnn.param = #dsnn.param<name = "self_attn.k_proj.weight", init = normal, std = 0.02>},
    %wv: tensor<8x8xf32> {dsnn.param = #dsnn.param<name = "self_attn.v_proj.weight", init = normal, std = 0.02>},
    %wo: tensor<8x16xf32> {dsnn.param = #dsnn.param<name = "self_attn.o_proj.weight", init = normal, std = 0.02>},
    %x: tensor<1x3x8xf32>) -> tensor<f32> {
    %cos = arith.constant dense<1.0> : tensor<3x4xf32>
    %sin = arith.constant dense<0.5> : tensor<3x4xf32>
    %zeros = arith.constant dense<0.0> : tensor<2x3x4xf32>
    %q = dsnn.linear %x, %wq : (tensor<1x3x8xf32>, tensor<16x8xf32>) -> tensor<1x3x16xf32>
    %q4 = dsnn.reshape %q : tensor<1x3x16xf32> -> tensor<1x3x4x4xf32>
    %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<1x3x4x4xf32> -> tensor<1x4x3x4xf32>
    %q1, %q2 = dsnn.split %qh dim 3 : tensor<1x4x3x4xf32> -> tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>
    %qn = dsnn.neg %q2 : tensor<1x4x3x2xf32>
    %qt = dsnn.concat %qn, %q1 dim 3 : tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32> -> tensor<1x4x3x4xf32>
    %qc = dsnn.mul %qh, %cos : tensor<1x4x3x4xf32>, tensor<3x4xf32> -> tensor<1x4x3x4xf32>
    %qs = dsnn.mul %qt, %sin : tensor<1x4x3x4xf32>, tensor<3x4xf32> -> tensor<1x4x3x4xf32>
    %qr = dsnn.add %qc, %qs : tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32> -> tensor<1x4x3x4xf32>
    %k = dsnn.linear %x, %wk : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
    %k4 = dsnn.reshape %k : tensor<1x3x8xf32> -> tensor<1x3x2x4xf32>
    %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
    %k1, %k2 = dsnn.split %kh dim 3 : tensor<1x2x3x4xf32> -> tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
    %kn = dsnn.neg %k2 : tensor<1x2x3x2xf32>
    %kt = dsnn.concat %kn, %k1 dim 3 : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32> -> tensor<1x2x3x4xf32>
    %kc = dsnn.mul %kh, %cos : tensor<1x2x3x4xf32>, tensor<3x4xf32> -> tensor<1x2x3x4xf32>
    %ks = dsnn.mul %kt, %sin : tensor<1x2x3x4xf32>, tensor<3x4xf32> -> tensor<1x2x3x4xf32>
    %kr = dsnn.add %kc, %ks : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
    %k5 = dsnn.reshape %kr : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
    %ke = dsnn.add %k5, %zeros : tensor<1x2x1x3x4xf32>, tensor<2x3x4xf32> -> tensor<1x2x2x3x4xf32>
    %kk = dsnn.reshape %ke : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
    %v = dsnn.linear %x, %wv : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
    %v4 = dsnn.reshape %v : tensor<1x3x8xf32> -> tensor<1x3x2x4xf32>
    %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
    %v5 = dsnn.reshape %vh : tensor<1x2x3x4xf32> -> tensor<1x2x1x3x4xf32>
    %ve = dsnn.add %v5, %zeros : tensor<1x2x1x3x4xf32>, tensor<2x3x4xf32> -> tensor<1x2x2x3x4xf32>
    %vv = dsnn.reshape %ve : tensor<1x2x2x3x4xf32> -> tensor<1x4x3x4xf32>
    %att = dsnn.attention %qr, %kk, %vv {causal} : tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32>, tensor<1x4x3x4xf32> -> tensor<1x4x3x4xf32>
    %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<1x4x3x4xf32> -> tensor<1x3x4x4xf32>
    %attC = dsnn.reshape %attT : tensor<1x3x4x4xf32> -> tensor<1x3x16xf32>
    %o = dsnn.linear %attC, %wo : (tensor<1x3x16xf32>, tensor<8x16xf32>) -> tensor<1x3x8xf32>
    %s = dsnn.reduce_sum %o dims [0, 1, 2] : tensor<1x3x8xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Attention as an imported PyTorch model writes it (byom Llama, NeoX):
// scores by batch_matmul, scaled by a constant, masked by constant [T, T]
// tables, softmax along keys, then P·V by batch_matmul. Both products run
// on each rank's heads, as dsnn.attention does. The LM head is its own
// layer and its logits are flattened to [B·T, V] before the loss: the head
// is still vocabulary-parallel, through the layer's result and the reshape.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    %[[WQ:[^:]*]]: tensor<8x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [16, 16]>
// CHECK-SAME:    %[[WK:[^:]*]]: tensor<8x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [16, 16]>
// CHECK-SAME:    %[[WV:[^:]*]]: tensor<8x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [16, 16]>
// CHECK-SAME:    %[[WO:[^:]*]]: tensor<16x8xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 1, blocks = 1, shape = [16, 16]>
// CHECK-SAME:    %[[HEAD:[^:]*]]: tensor<32x16xf32> {dsdist.tensor_parallel = #dsdist.tensor_shard<axes = ["tp"], dim = 0, blocks = 1, shape = [64, 16]>
// CHECK:         %[[S:.*]] = dsnn.batch_matmul %{{.*}}, %{{.*}} : tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x1x8x8xf32>
// CHECK-NEXT:    dsnn.div %[[S]], %{{.*}} : tensor<2x1x8x8xf32>, tensor<f32> -> tensor<2x1x8x8xf32>
// CHECK:         %[[P:.*]] = dsnn.softmax %{{.*}} dim 3 : tensor<2x1x8x8xf32>
// CHECK-NEXT:    dsnn.batch_matmul %[[P]], %{{.*}} : tensor<2x1x8x8xf32>, tensor<2x1x8x8xf32> -> tensor<2x1x8x8xf32>
// CHECK:         %[[O:.*]] = dsnn.linear %{{.*}}, %[[WO]] : (tensor<2x8x8xf32>, tensor<16x8xf32>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    dsdist.all_reduce sum %[[O]] over ["tp"] : tensor<2x8x16xf32>
// CHECK:         %[[L:.*]] = dsnn.layer "lm_head"("Linear") -> tensor<2x8x32xf32>
// CHECK:           dsnn.linear %{{.*}}, %[[HEAD]] : (tensor<2x8x16xf32>, tensor<32x16xf32>) -> tensor<2x8x32xf32>
// CHECK:         %[[FLAT:.*]] = dsnn.reshape %[[L]] : tensor<2x8x32xf32> -> tensor<16x32xf32>
// CHECK:         dsdist.all_reduce max %{{.*}} over ["tp"] : tensor<16xf32>
// CHECK:         dsnn.cross_entropy %[[FLAT]], %{{.*}} stats
module {
  func.func @forward(
    %wq: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "attn.wq.weight", init = normal, std = 0.02>},
    %wk: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "attn.wk.weight", init = normal, std = 0.02>},
    %wv: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "attn.wv.weight", init = normal, std = 0.02>},
    %wo: tensor<16x16xf32> {dsnn.param = #dsnn.param<name = "attn.wo.weight", init = normal, std = 0.02>},
    %head: tensor<64x16xf32> {dsnn.param = #dsnn.param<name = "lm_head.weight", init = normal, std = 0.02>},
    %x: tensor<2x8x16xf32>, %targets: tensor<2x8xi64>) -> tensor<f32> {
    %scale = arith.constant dense<2.82842708> : tensor<f32>
    %keep = arith.constant dense<1.0> : tensor<8x8xf32>
    %fill = arith.constant dense<0.0> : tensor<8x8xf32>
    %q = dsnn.linear %x, %wq : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %q4 = dsnn.reshape %q : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %k = dsnn.linear %x, %wk : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %k4 = dsnn.reshape %k : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %kt = dsnn.transpose %k4 perm [0, 2, 3, 1] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %v = dsnn.linear %x, %wv : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %v4 = dsnn.reshape %v : tensor<2x8x16xf32> -> tensor<2x8x2x8xf32>
    %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<2x8x2x8xf32> -> tensor<2x2x8x8xf32>
    %s = dsnn.batch_matmul %qh, %kt : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x2x8x8xf32>
    %sd = dsnn.div %s, %scale : tensor<2x2x8x8xf32>, tensor<f32> -> tensor<2x2x8x8xf32>
    %sm = dsnn.mul %sd, %keep : tensor<2x2x8x8xf32>, tensor<8x8xf32> -> tensor<2x2x8x8xf32>
    %sa = dsnn.add %sm, %fill : tensor<2x2x8x8xf32>, tensor<8x8xf32> -> tensor<2x2x8x8xf32>
    %p = dsnn.softmax %sa dim 3 : tensor<2x2x8x8xf32>
    %y = dsnn.batch_matmul %p, %vh : tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32> -> tensor<2x2x8x8xf32>
    %yt = dsnn.transpose %y perm [0, 2, 1, 3] : tensor<2x2x8x8xf32> -> tensor<2x8x2x8xf32>
    %yc = dsnn.reshape %yt : tensor<2x8x2x8xf32> -> tensor<2x8x16xf32>
    %o = dsnn.linear %yc, %wo : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %logits = dsnn.layer "lm_head"("Linear") -> tensor<2x8x64xf32> {
      %l = dsnn.linear %o, %head : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
      dsnn.yield %l : tensor<2x8x64xf32>
    }
    %flat = dsnn.reshape %logits : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %t = dsnn.reshape %targets : tensor<2x8xi64> -> tensor<16xi64>
    %loss = dsnn.cross_entropy %flat, %t : tensor<16x64xf32>, tensor<16xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
