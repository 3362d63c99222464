// RUN: ds-opt %s --split-input-file --ds-sequence-parallel="size=2 dp-size=2" | FileCheck %s
// RUN: ds-opt %s --split-input-file --ds-sequence-parallel="size=2 dp-size=2" --ds-autodiff | FileCheck %s --check-prefix=GRAD --implicit-check-not=dsdist.copy_to_group
// RUN: ds-opt %s --split-input-file --ds-sequence-parallel="size=2 dp-size=2" --ds-mixed-precision=dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: ds-opt %s --split-input-file --ds-sequence-parallel="size=2 dp-size=2" --ds-mixed-precision=dtype=bf16 --ds-autodiff | FileCheck %s --check-prefix=BF16GRAD

// A GPT block (T = 4 positions, 2 heads of 4, width 8) over a sequence-
// parallel group of two ranks (Ulysses). Each rank keeps its 2 positions
// of the batch and of the position ids, runs everything outside attention
// on [2, 2, ..], and trades sequence shards for head shards around the
// attention with an all-to-all over sp, so the attention sees all 4
// positions (the one-rank causal mask) on one head. The loss is each
// rank's mean times 1/2, summed over sp; every parameter's gradient is
// summed over sp by copy_to_group's VJP.

// CHECK:       module attributes {dsdist.grid = #dsdist.grid<dp = 2, sp = 2>}
// The grid reads back, so the IR after this pass can be edited and fed on.
// RUN: ds-opt %s --split-input-file --ds-sequence-parallel="size=2 dp-size=2" | ds-opt --split-input-file | FileCheck %s --check-prefix=READ
// READ:        module attributes {dsdist.grid = #dsdist.grid<dp = 2, sp = 2>}
// CHECK-LABEL: func.func @forward(
// CHECK-DAG:     %[[WTE:.*]] = dsdist.copy_to_group %arg0 over ["sp"] : tensor<16x8xf32>
// CHECK-DAG:     %[[WPE:.*]] = dsdist.copy_to_group %arg1 over ["sp"] : tensor<4x8xf32>
// The batch's sequence dim is not the leading one: to the front, this
// rank's half, and back.
// CHECK:         %[[IT:.*]] = dsnn.transpose %arg4 perm [1, 0] : tensor<2x4xi64> -> tensor<4x2xi64>
// CHECK-NEXT:    %[[IS:.*]] = dsdist.shard %[[IT]] over ["sp"] dim 0 : tensor<4x2xi64> -> tensor<2x2xi64>
// CHECK-NEXT:    %[[IDS:.*]] = dsnn.transpose %[[IS]] perm [1, 0] : tensor<2x2xi64> -> tensor<2x2xi64>
// CHECK:         %[[TS:.*]] = dsdist.shard %{{.*}} over ["sp"] dim 0 : tensor<4x2xi64> -> tensor<2x2xi64>
// CHECK-NEXT:    %[[TGT:.*]] = dsnn.transpose %[[TS]] perm [1, 0] : tensor<2x2xi64> -> tensor<2x2xi64>
// CHECK:         dsnn.layer "h.0"("GPT2Block") -> tensor<2x2x8xf32>
// CHECK:           dsnn.embedding %[[IDS]], %[[WTE]] : tensor<2x2xi64>, tensor<16x8xf32> -> tensor<2x2x8xf32>
// The positions of this rank's tokens: its half of [0, 1, 2, 3].
// CHECK:           %[[POS:.*]] = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
// CHECK-NEXT:      %[[MINE:.*]] = dsdist.shard %[[POS]] over ["sp"] dim 0 : tensor<4xi64> -> tensor<2xi64>
// CHECK-NEXT:      dsnn.embedding %[[MINE]], %[[WPE]] : tensor<2xi64>, tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK:           dsnn.linear %{{.*}} -> tensor<2x2x24xf32>
// Sequence shards to head shards: heads in front, exchanged, the blocks
// of positions put back in global order.
// CHECK:           %[[QT:.*]] = dsnn.transpose %{{.*}} perm [1, 0, 2, 3] : tensor<2x2x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK-NEXT:      %[[QX:.*]] = dsdist.all_to_all %[[QT]] over ["sp"] split 0 concat 0 : tensor<2x2x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK-NEXT:      %[[QB:.*]] = dsnn.reshape %[[QX]] : tensor<2x2x2x4xf32> -> tensor<2x1x2x2x4xf32>
// CHECK-NEXT:      %[[QO:.*]] = dsnn.transpose %[[QB]] perm [2, 1, 0, 3, 4] : tensor<2x1x2x2x4xf32> -> tensor<2x1x2x2x4xf32>
// CHECK-NEXT:      %[[Q:.*]] = dsnn.reshape %[[QO]] : tensor<2x1x2x2x4xf32> -> tensor<2x1x4x4xf32>
// CHECK-COUNT-2:   dsdist.all_to_all
// CHECK:           %[[A:.*]] = dsnn.attention %[[Q]], %{{.*}}, %{{.*}} {causal} : tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32> -> tensor<2x1x4x4xf32>
// And back: this rank's positions, every head.
// CHECK-NEXT:      %[[AB:.*]] = dsnn.reshape %[[A]] : tensor<2x1x4x4xf32> -> tensor<2x1x2x2x4xf32>
// CHECK-NEXT:      %[[AR:.*]] = dsnn.transpose %[[AB]] perm [2, 1, 0, 3, 4] : tensor<2x1x2x2x4xf32> -> tensor<2x1x2x2x4xf32>
// CHECK-NEXT:      %[[AF:.*]] = dsnn.reshape %[[AR]] : tensor<2x1x2x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK-NEXT:      %[[AX:.*]] = dsdist.all_to_all %[[AF]] over ["sp"] split 0 concat 0 : tensor<2x2x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK-NEXT:      dsnn.transpose %[[AX]] perm [1, 0, 2, 3] : tensor<2x2x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK:           dsnn.yield %{{.*}} : tensor<2x2x8xf32>
// CHECK:         %[[LOGITS:.*]] = dsnn.linear %{{.*}}, %[[WTE]] : (tensor<2x2x8xf32>, tensor<16x8xf32>) -> tensor<2x2x16xf32>
// CHECK-NEXT:    %[[CE:.*]] = dsnn.cross_entropy %[[LOGITS]], %[[TGT]] : tensor<2x2x16xf32>, tensor<2x2xi64> -> tensor<f32>
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[PART:.*]] = dsnn.mul %[[CE]], %[[HALF]]
// CHECK-NEXT:    %[[LOSS:.*]] = dsdist.all_reduce sum %[[PART]] over ["sp"] : tensor<f32>
// CHECK-NEXT:    return %[[LOSS]] : tensor<f32>

// The backward: the inverse exchanges come from the all-to-alls' VJPs, and
// each parameter's gradient is summed over sp.
// GRAD-LABEL:  func.func @forward_backward(
// GRAD-COUNT-8: dsdist.all_to_all {{.*}} over ["sp"] split 0 concat 0
// GRAD-COUNT-4: dsdist.all_reduce sum %{{.*}} over ["sp"] : tensor<{{[0-9x]+}}xf32>

// In bf16 (ds-mixed-precision runs after this pass) each copy_to_group
// still reads the f32 parameter and its uses read a bf16 cast of it, so
// the gradients are summed over sp in f32, as one rank adds the f32 casts
// of its 16-bit gradients; the exchanges around attention move bf16.
// BF16-LABEL:  func.func @forward(
// BF16:          %[[WTE:.*]] = dsdist.copy_to_group %arg0 over ["sp"] : tensor<16x8xf32>
// BF16:          %[[WTE16:.*]] = dsnn.cast %[[WTE]] : tensor<16x8xf32> -> tensor<16x8xbf16>
// BF16-NEXT:     dsnn.embedding %{{.*}}, %[[WTE16]] : tensor<2x2xi64>, tensor<16x8xbf16> -> tensor<2x2x8xbf16>
// BF16-COUNT-4:  dsdist.all_to_all %{{.*}} over ["sp"] split 0 concat 0 : tensor<2x2x2x4xbf16> -> tensor<2x2x2x4xbf16>
// BF16GRAD-LABEL:  func.func @forward_backward(
// BF16GRAD-COUNT-8: dsdist.all_to_all %{{.*}} over ["sp"] split 0 concat 0 : tensor<2x2x2x4xbf16> -> tensor<2x2x2x4xbf16>
// BF16GRAD-COUNT-4: dsdist.all_reduce sum %{{.*}} over ["sp"] : tensor<{{[0-9x]+}}xf32>

module {
  func.func @forward(
    %wte: tensor<16x8xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02, tied = "wte">},
    %wpe: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "wpe.weight", init = normal, std = 0.02>},
    %qkv_w: tensor<24x8xf32> {dsnn.param = #dsnn.param<name = "attn.c_attn.weight", init = normal, std = 0.02>},
    %proj_w: tensor<8x8xf32> {dsnn.param = #dsnn.param<name = "attn.c_proj.weight", init = normal, std = 0.02>},
    %ids: tensor<2x4xi64> {dsnn.batch = "input_ids"},
    %targets: tensor<2x4xi64> {dsnn.batch = "targets"}) -> tensor<f32> {
    %h = dsnn.layer "h.0"("GPT2Block") -> tensor<2x4x8xf32> {
      %e = dsnn.embedding %ids, %wte : tensor<2x4xi64>, tensor<16x8xf32> -> tensor<2x4x8xf32>
      %pos = arith.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
      %p = dsnn.embedding %pos, %wpe : tensor<4xi64>, tensor<4x8xf32> -> tensor<4x8xf32>
      %x = dsnn.add %e, %p : tensor<2x4x8xf32>, tensor<4x8xf32> -> tensor<2x4x8xf32>
      %qkv = dsnn.linear %x, %qkv_w : (tensor<2x4x8xf32>, tensor<24x8xf32>) -> tensor<2x4x24xf32>
      %q, %k, %v = dsnn.split %qkv dim 2 : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
      %q4 = dsnn.reshape %q : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
      %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
      %k4 = dsnn.reshape %k : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
      %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
      %v4 = dsnn.reshape %v : tensor<2x4x8xf32> -> tensor<2x4x2x4xf32>
      %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
      %att = dsnn.attention %qh, %kh, %vh {causal} : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
      %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
      %attC = dsnn.reshape %attT : tensor<2x4x2x4xf32> -> tensor<2x4x8xf32>
      %o = dsnn.linear %attC, %proj_w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
      %r = dsnn.add %x, %o : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
      dsnn.yield %r : tensor<2x4x8xf32>
    }
    %logits = dsnn.linear %h, %wte : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
    %loss = dsnn.cross_entropy %logits, %targets : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----

// Llama-style RoPE: the cos table [T, D] is a constant indexed by the
// global position, so each rank multiplies by its rows of it; rotate_half's
// concat along the head dim stays sequence-local.

// CHECK-LABEL: func.func @forward(
// CHECK:         %[[COS:.*]] = arith.constant dense<{{.*}}> : tensor<4x4xf32>
// CHECK:         dsnn.concat %{{.*}}, %{{.*}} dim 3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32> -> tensor<1x2x2x4xf32>
// CHECK:         %[[MINE:.*]] = dsdist.shard %[[COS]] over ["sp"] dim 0 : tensor<4x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    dsnn.mul %{{.*}}, %[[MINE]] : tensor<1x2x2x4xf32>, tensor<2x4xf32> -> tensor<1x2x2x4xf32>
// CHECK:         dsnn.attention {{.*}} -> tensor<1x1x4x4xf32>
module {
  func.func @forward(%x: tensor<1x4x8xf32> {dsnn.batch = "inputs"},
                     %t: tensor<1x4xi64> {dsnn.batch = "targets"}) -> tensor<f32> {
    %cos = arith.constant dense<[[1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5], [0.25, 0.25, 0.25, 0.25], [0.125, 0.125, 0.125, 0.125]]> : tensor<4x4xf32>
    %x4 = dsnn.reshape %x : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %h = dsnn.transpose %x4 perm [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %lo, %hi = dsnn.split %h dim 3 : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>
    %n = dsnn.neg %hi : tensor<1x2x4x2xf32>
    %rot = dsnn.concat %n, %lo dim 3 : tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32> -> tensor<1x2x4x4xf32>
    %q = dsnn.mul %rot, %cos : tensor<1x2x4x4xf32>, tensor<4x4xf32> -> tensor<1x2x4x4xf32>
    %a = dsnn.attention %q, %h, %h {causal} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
    %aT = dsnn.transpose %a perm [0, 2, 1, 3] : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
    %logits = dsnn.reshape %aT : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
    %loss = dsnn.cross_entropy %logits, %t : tensor<1x4x8xf32>, tensor<1x4xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
