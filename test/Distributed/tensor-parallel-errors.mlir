// RUN: ds-opt %s --split-input-file --verify-diagnostics --ds-tensor-parallel="size=2"

// Three heads do not split over two ranks: the reshape into heads names it.
module {
  func.func @forward(
    %qkv_w: tensor<36x12xf32> {dsnn.param = #dsnn.param<name = "qkv.weight", init = normal, std = 0.02>},
    %p_w: tensor<12x12xf32> {dsnn.param = #dsnn.param<name = "proj.weight", init = normal, std = 0.02>},
    %x: tensor<1x4x12xf32>) -> tensor<f32> {
    // expected-error @+1 {{ds-tensor-parallel: cutting the output of 'qkv.weight': 'dsnn.reshape' result dim 2 is 3, which tensor-parallel size 2 does not divide (heads, key/value heads and MLP width must split evenly over the ranks)}}
    %qkv = dsnn.linear %x, %qkv_w : (tensor<1x4x12xf32>, tensor<36x12xf32>) -> tensor<1x4x36xf32>
    %q, %k, %v = dsnn.split %qkv dim 2 : tensor<1x4x36xf32> -> tensor<1x4x12xf32>, tensor<1x4x12xf32>, tensor<1x4x12xf32>
    %q4 = dsnn.reshape %q : tensor<1x4x12xf32> -> tensor<1x4x3x4xf32>
    %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<1x4x3x4xf32> -> tensor<1x3x4x4xf32>
    %k4 = dsnn.reshape %k : tensor<1x4x12xf32> -> tensor<1x4x3x4xf32>
    %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<1x4x3x4xf32> -> tensor<1x3x4x4xf32>
    %v4 = dsnn.reshape %v : tensor<1x4x12xf32> -> tensor<1x4x3x4xf32>
    %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<1x4x3x4xf32> -> tensor<1x3x4x4xf32>
    %att = dsnn.attention %qh, %kh, %vh {causal} : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32> -> tensor<1x3x4x4xf32>
    %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<1x3x4x4xf32> -> tensor<1x4x3x4xf32>
    %attC = dsnn.reshape %attT : tensor<1x4x3x4xf32> -> tensor<1x4x12xf32>
    %o = dsnn.linear %attC, %p_w : (tensor<1x4x12xf32>, tensor<12x12xf32>) -> tensor<1x4x12xf32>
    %s = dsnn.reduce_sum %o dims [0, 1, 2] : tensor<1x4x12xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// An MLP width of 5 does not split over two ranks.
module {
  func.func @forward(
    %up: tensor<5x4xf32> {dsnn.param = #dsnn.param<name = "up.weight", init = normal, std = 0.02>},
    %down: tensor<4x5xf32> {dsnn.param = #dsnn.param<name = "down.weight", init = normal, std = 0.02>},
    %x: tensor<3x4xf32>) -> tensor<f32> {
    // expected-error @+1 {{ds-tensor-parallel: output width 5 in 1 block(s) is not divisible by tensor-parallel size 2 per block}}
    %h = dsnn.linear %x, %up : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
    %a = dsnn.gelu %h : tensor<3x5xf32>
    %y = dsnn.linear %a, %down : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A whole operand that spans the cut dim (here a table the shape of the
// cut value; RoPE's tables, which broadcast along heads, are fine) has no
// per-rank slice yet: refused with the op.
module {
  func.func @forward(
    %up: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "up.weight", init = normal, std = 0.02>},
    %down: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "down.weight", init = normal, std = 0.02>},
    %x: tensor<3x4xf32>, %table: tensor<3x8xf32>) -> tensor<f32> {
    %h = dsnn.linear %x, %up : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    // expected-error @+1 {{ds-tensor-parallel: operand #1 is not cut like the other operands, which come from a column-parallel linear; ds cannot place this op on a tensor-parallel shard yet (a whole table or mask combined with heads), use autotp_size 1}}
    %r = dsnn.mul %h, %table : tensor<3x8xf32>, tensor<3x8xf32> -> tensor<3x8xf32>
    %y = dsnn.linear %r, %down : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// Nothing to cut: one linear straight into the loss.
// expected-error @+1 {{ds-tensor-parallel: no linear could be cut: tensor parallelism needs a parameter linear whose output reaches only other parameter linears (an MLP or an attention block); use autotp_size 1}}
module {
  func.func @forward(%w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = 0.02>},
                     %x: tensor<2x8xf32>) -> tensor<f32> {
    %y = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A fused projection split into unequal blocks (GQA's Q and KV) has no
// per-rank piece yet: it stays whole, and then nothing is cut.
// expected-error @+1 {{ds-tensor-parallel: no linear could be cut}}
module {
  func.func @forward(
    %up: tensor<12x4xf32> {dsnn.param = #dsnn.param<name = "up.weight", init = normal, std = 0.02>},
    %d0: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "d0.weight", init = normal, std = 0.02>},
    %d1: tensor<4x4xf32> {dsnn.param = #dsnn.param<name = "d1.weight", init = normal, std = 0.02>},
    %x: tensor<3x4xf32>) -> tensor<f32> {
    %h = dsnn.linear %x, %up : (tensor<3x4xf32>, tensor<12x4xf32>) -> tensor<3x12xf32>
    %a, %b = dsnn.split %h dim 1 : tensor<3x12xf32> -> tensor<3x8xf32>, tensor<3x4xf32>
    %y0 = dsnn.linear %a, %d0 : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
    %y1 = dsnn.linear %b, %d1 : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %y = dsnn.add %y0, %y1 : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// A value that is not a constant, broadcast along the cut (one column per
// row against each rank's half of the width): its gradient on each rank
// would be only its half's. Refused with the op.
module {
  func.func @forward(
    %up: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "up.weight", init = normal, std = 0.02>},
    %down: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "down.weight", init = normal, std = 0.02>},
    %x: tensor<3x4xf32>, %scale: tensor<3x1xf32>) -> tensor<f32> {
    %h = dsnn.linear %x, %up : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
    // expected-error @+1 {{ds-tensor-parallel: operand #1 is broadcast along the tensor-parallel cut of the other operand but is not a constant: each rank would see only its part of its gradient; use autotp_size 1}}
    %r = dsnn.mul %h, %scale : tensor<3x8xf32>, tensor<3x1xf32> -> tensor<3x8xf32>
    %y = dsnn.linear %r, %down : (tensor<3x8xf32>, tensor<4x8xf32>) -> tensor<3x4xf32>
    %s = dsnn.reduce_sum %y dims [0, 1] : tensor<3x4xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}

// -----

// An attention projection whose heads meet an op that mixes them (a
// softmax over heads) is not silently left whole: the op is named.
module {
  func.func @forward(
    %qkv_w: tensor<24x8xf32> {dsnn.param = #dsnn.param<name = "qkv.weight", init = normal, std = 0.02>},
    %p_w: tensor<8x8xf32> {dsnn.param = #dsnn.param<name = "proj.weight", init = normal, std = 0.02>},
    %x: tensor<1x4x8xf32>) -> tensor<f32> {
    %qkv = dsnn.linear %x, %qkv_w : (tensor<1x4x8xf32>, tensor<24x8xf32>) -> tensor<1x4x24xf32>
    %q, %k, %v = dsnn.split %qkv dim 2 : tensor<1x4x24xf32> -> tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
    %q4 = dsnn.reshape %q : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %qh = dsnn.transpose %q4 perm [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    // expected-error @+1 {{ds-tensor-parallel: cannot follow the heads of 'qkv.weight' (an attention projection) through this op, so ds cannot cut that attention by heads; use autotp_size 1}}
    %qm = dsnn.softmax %qh dim 1 : tensor<1x2x4x4xf32>
    %k4 = dsnn.reshape %k : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %kh = dsnn.transpose %k4 perm [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %v4 = dsnn.reshape %v : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
    %vh = dsnn.transpose %v4 perm [0, 2, 1, 3] : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
    %att = dsnn.attention %qm, %kh, %vh {causal} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
    %attT = dsnn.transpose %att perm [0, 2, 1, 3] : tensor<1x2x4x4xf32> -> tensor<1x4x2x4xf32>
    %attC = dsnn.reshape %attT : tensor<1x4x2x4xf32> -> tensor<1x4x8xf32>
    %o = dsnn.linear %attC, %p_w : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
    %s = dsnn.reduce_sum %o dims [0, 1, 2] : tensor<1x4x8xf32> -> tensor<f32>
    return %s : tensor<f32>
  }
}
