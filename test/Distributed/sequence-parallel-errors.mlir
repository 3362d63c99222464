// RUN: ds-opt %s --split-input-file --verify-diagnostics --ds-sequence-parallel="size=3"

// Four positions do not split over three ranks.
module {
  // expected-error @+1 {{ds-sequence-parallel: sequence length 4 is not divisible by sequence_parallel_size 3; use a sequence length that is a multiple of it}}
  func.func @forward(%x: tensor<1x2x4x4xf32> {dsnn.batch = "inputs"}) -> tensor<1x2x4x4xf32> {
    %a = dsnn.attention %x, %x, %x {causal} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
    return %a : tensor<1x2x4x4xf32>
  }
}

// -----

// No attention: nothing for Ulysses to split.
module {
  // expected-error @+1 {{ds-sequence-parallel: the model has no dsnn.attention; Ulysses sequence parallelism splits attention by heads}}
  func.func @forward(%x: tensor<2x6x4xf32> {dsnn.batch = "inputs"}) -> tensor<2x6x4xf32> {
    %y = dsnn.gelu %x : tensor<2x6x4xf32>
    return %y : tensor<2x6x4xf32>
  }
}

// -----

// Two heads do not split over three ranks (six positions do).
module {
  func.func @forward(%x: tensor<1x6x8xf32> {dsnn.batch = "inputs"}) -> tensor<1x6x2x4xf32> {
    %x4 = dsnn.reshape %x : tensor<1x6x8xf32> -> tensor<1x6x2x4xf32>
    %h = dsnn.transpose %x4 perm [0, 2, 1, 3] : tensor<1x6x2x4xf32> -> tensor<1x2x6x4xf32>
    // expected-error @+1 {{ds-sequence-parallel: 2 attention heads are not divisible by sequence_parallel_size 3; each rank of the sp group attends with heads / sequence_parallel_size heads}}
    %a = dsnn.attention %h, %h, %h {causal} : tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32> -> tensor<1x2x6x4xf32>
    %t = dsnn.transpose %a perm [0, 2, 1, 3] : tensor<1x2x6x4xf32> -> tensor<1x6x2x4xf32>
    return %t : tensor<1x6x2x4xf32>
  }
}

// -----

// A table indexed by position that is computed rather than a constant (a
// learned positional bias) has no per-rank slice: refused with the op.
module {
  func.func @forward(%x: tensor<1x6x3x4xf32> {dsnn.batch = "inputs"},
                     %table: tensor<6x1x4xf32> {dsnn.param = #dsnn.param<name = "bias", init = zeros>}) -> tensor<1x3x6x4xf32> {
    // expected-error @+1 {{ds-sequence-parallel: operand #1 is indexed by the sequence but is neither sharded along it nor a constant that could be sliced}}
    %r = dsnn.mul %x, %table : tensor<1x6x3x4xf32>, tensor<6x1x4xf32> -> tensor<1x6x3x4xf32>
    %h = dsnn.transpose %r perm [0, 2, 1, 3] : tensor<1x6x3x4xf32> -> tensor<1x3x6x4xf32>
    %a = dsnn.attention %h, %h, %h {causal} : tensor<1x3x6x4xf32>, tensor<1x3x6x4xf32>, tensor<1x3x6x4xf32> -> tensor<1x3x6x4xf32>
    return %a : tensor<1x3x6x4xf32>
  }
}

// -----

// An op that mixes positions outside attention.
module {
  func.func @forward(%x: tensor<1x6x3x4xf32> {dsnn.batch = "inputs"}) -> tensor<1x3x6x4xf32> {
    // expected-error @+1 {{ds-sequence-parallel: 'dsnn.softmax' reads a sequence-sharded value but is not known to act on each position alone}}
    %s = dsnn.softmax %x dim 1 : tensor<1x6x3x4xf32>
    %h = dsnn.transpose %s perm [0, 2, 1, 3] : tensor<1x6x3x4xf32> -> tensor<1x3x6x4xf32>
    %a = dsnn.attention %h, %h, %h {causal} : tensor<1x3x6x4xf32>, tensor<1x3x6x4xf32>, tensor<1x3x6x4xf32> -> tensor<1x3x6x4xf32>
    return %a : tensor<1x3x6x4xf32>
  }
}
