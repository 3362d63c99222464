// Two ZeRO-3 layers as ds-zero leaves them: each parameter gathered just
// before its layer and released after it.
// RUN: ds-opt %s --ds-schedule-comm="max-reuse-distance=0" --split-input-file | FileCheck %s
// A budget of one gathered layer: layer 1's gather may start only once
// layer 0's buffer is released.
// RUN: ds-opt %s --ds-schedule-comm="max-live-parameters=16 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=LIVE
// No room to prefetch: each gather starts where it was.
// RUN: ds-opt %s --ds-schedule-comm="prefetch-bucket-size=8 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: ds-opt %s --ds-schedule-comm="overlap-reduce=false max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=NORED
// RUN: ds-opt %s --ds-schedule-comm="fuse-bytes=0 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=NOFUSE
// RUN: ds-opt %s --ds-schedule-comm="reduce-bucket-size=65536 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=BUCKET
// RUN: ds-opt %s --ds-schedule-comm="comm-profile=%S/Inputs/comm-profile-bandwidth.json max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=NOFUSE
// A memory budget of 64 bytes (one 16-element f32 layer) holds back layer
// 1's gather as max-live-parameters=16 does.
// RUN: ds-opt %s --ds-schedule-comm="memory-budget=64 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=LIVE
// RUN: not ds-opt %s --ds-schedule-comm="comm-profile=%S/Inputs/no-such-profile.json" 2>&1 | FileCheck %s --check-prefix=NOPROFILE
// NOPROFILE: error: ds-schedule-comm: comm-profile {{.*}}no-such-profile.json: cannot read the communication profile
// The passes above keep no forward gather for the backward
// (max-reuse-distance=0). Selective unsharding: room for one buffer, none,
// all; without it, DeepSpeed's reuse distance: by default (1e9 elements)
// every parameter reused within it keeps its buffer, at 64 elements only
// %b (8 elements gathered between its two gathers, 128 for %a), at 0 none.
// RUN: ds-opt %s --ds-schedule-comm="selective-unshard=true fuse-bytes=0 memory-budget=576" --split-input-file | FileCheck %s --check-prefix=UNSHARD
// RUN: ds-opt %s --ds-schedule-comm="selective-unshard=true fuse-bytes=0 memory-budget=544" --split-input-file | FileCheck %s --check-prefix=KEEP
// RUN: ds-opt %s --ds-schedule-comm="fuse-bytes=0 max-reuse-distance=0" --split-input-file | FileCheck %s --check-prefix=KEEP
// RUN: ds-opt %s --ds-schedule-comm="fuse-bytes=0" --split-input-file | FileCheck %s --check-prefix=ALL
// RUN: ds-opt %s --ds-schedule-comm="fuse-bytes=0 max-reuse-distance=64" --split-input-file | FileCheck %s --check-prefix=REUSE
// RUN: not ds-opt %s --ds-schedule-comm="max-reuse-distance=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: ds-schedule-comm: max-live-parameters, prefetch-bucket-size, max-reuse-distance, reduce-bucket-size (elements), fuse-bytes and memory-budget (bytes) must be >= 0
// RUN: ds-opt %s --ds-schedule-comm="selective-unshard=true" --split-input-file | FileCheck %s --check-prefix=ALL

// CHECK-LABEL: func @layer_gathers_prefetched
// CHECK-NEXT:    %[[H0:.*]] = dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "forward"}
// CHECK-NEXT:    %[[H1:.*]] = dsdist.all_gather_start %arg1 over ["dp"] dim 0 {phase = "forward"}
// CHECK-NEXT:    %[[G0:.*]] = dsdist.wait %[[H0]]
// CHECK-NEXT:    dsnn.layer "h.0"
// CHECK:         dsdist.release %[[G0]]
// CHECK-NEXT:    %[[G1:.*]] = dsdist.wait %[[H1]]
// CHECK-NEXT:    dsnn.layer "h.1"
// CHECK:         dsdist.release %[[G1]]

// LIVE-LABEL: func @layer_gathers_prefetched
// LIVE-NEXT:    dsdist.all_gather_start %arg0
// LIVE-NEXT:    dsdist.wait
// LIVE-NEXT:    dsnn.layer "h.0"
// LIVE:         dsdist.release
// LIVE-NEXT:    dsdist.all_gather_start %arg1
// LIVE-NEXT:    dsdist.wait
// LIVE-NEXT:    dsnn.layer "h.1"

// NONE-LABEL: func @layer_gathers_prefetched
// NONE-NEXT:    dsdist.all_gather_start %arg0
// NONE-NEXT:    dsdist.wait
// NONE-NEXT:    dsnn.layer "h.0"
// NONE:         dsdist.release
// NONE-NEXT:    dsdist.all_gather_start %arg1
// NONE-NEXT:    dsdist.wait
// NONE-NEXT:    dsnn.layer "h.1"
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @layer_gathers_prefetched(%w0: tensor<8xf32>, %w1: tensor<8xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
    %g0 = dsdist.all_gather %w0 over ["dp"] dim 0 {phase = "forward"} : tensor<8xf32> -> tensor<16xf32>
    %y0 = dsnn.layer "h.0"("Block") -> tensor<16xf32> {
      %a = dsnn.mul %x, %g0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
      dsnn.yield %a : tensor<16xf32>
    }
    dsdist.release %g0 : tensor<16xf32>
    %g1 = dsdist.all_gather %w1 over ["dp"] dim 0 {phase = "forward"} : tensor<8xf32> -> tensor<16xf32>
    %y1 = dsnn.layer "h.1"("Block") -> tensor<16xf32> {
      %a = dsnn.mul %y0, %g1 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
      dsnn.yield %a : tensor<16xf32>
    }
    dsdist.release %g1 : tensor<16xf32>
    return %y1 : tensor<16xf32>
  }
}

// -----

// A gradient reduction starts as soon as its operand exists and is waited
// where its result is first read, after the unrelated compute.
// CHECK-LABEL: func @reduction_waits_at_first_use
// CHECK-NEXT:    %[[G:.*]] = dsnn.mul %arg0, %arg0
// CHECK-NEXT:    %[[H:.*]] = dsdist.reduce_scatter_start avg %[[G]] over ["dp"] dim 0
// CHECK-NEXT:    %[[U:.*]] = dsnn.mul %arg1, %arg1
// CHECK-NEXT:    %[[R:.*]] = dsdist.wait %[[H]]
// CHECK-NEXT:    dsnn.add %[[R]], %[[U]]

// NORED-LABEL: func @reduction_waits_at_first_use
// NORED-NOT:     _start
// NORED:         dsdist.reduce_scatter avg
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @reduction_waits_at_first_use(%g0: tensor<16xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
    %g = dsnn.mul %g0, %g0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %r = dsdist.reduce_scatter avg %g over ["dp"] dim 0 : tensor<16xf32> -> tensor<8xf32>
    %u = dsnn.mul %y, %y : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    %s = dsnn.add %r, %u : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
    return %s : tensor<8xf32>
  }
}

// -----

// The gathers ds-zero puts before one layer fuse into one collective of the
// chunks packed as rows (DeepCompile's rule: the fused gather is predicted
// to take less than 1.2 x the longer of the two); each parameter is then
// its rows of the result, the same bytes.
// CHECK-LABEL: func @layer_gathers_fused
// CHECK-DAG:     %[[A:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 8]
// CHECK-DAG:     %[[B:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [1, 4]
// CHECK:         %[[P:.*]] = tensor.concat dim(1) %[[A]], %[[B]] : (tensor<1x8xf32>, tensor<1x4xf32>) -> tensor<1x12xf32>
// CHECK-NEXT:    %[[H:.*]] = dsdist.all_gather_start %[[P]] over ["dp"] dim 0 {phase = "forward"} : tensor<1x12xf32> -> !dsdist.handle<tensor<2x12xf32>>
// CHECK-NEXT:    %[[G:.*]] = dsdist.wait %[[H]]
// CHECK-NEXT:    %[[RA:.*]] = tensor.extract_slice %[[G]][0, 0] [2, 8] [1, 1]
// CHECK-NEXT:    %[[WA:.*]] = tensor.collapse_shape %[[RA]] {{\[\[}}0, 1]] : tensor<2x8xf32> into tensor<16xf32>
// CHECK-NEXT:    %[[RB:.*]] = tensor.extract_slice %[[G]][0, 8] [2, 4] [1, 1]
// CHECK-NEXT:    %[[WB:.*]] = tensor.collapse_shape %[[RB]] {{\[\[}}0, 1]] : tensor<2x4xf32> into tensor<8xf32>
// CHECK-NEXT:    %[[VA:.*]] = tensor.expand_shape %[[WA]]
// CHECK-NEXT:    %[[VB:.*]] = tensor.extract_slice %[[WB]]
// CHECK-NEXT:    dsnn.layer "h.0"
// CHECK:         dsdist.release %[[VA]]
// CHECK-NEXT:    dsdist.release %[[VB]]

// Fusion off, or a profile where bytes cost and start-up does not: two
// gathers of similar size take about their sum fused, more than 1.2 x
// either, so they stay apart.
// NOFUSE-LABEL: func @layer_gathers_fused
// NOFUSE-NOT:     tensor.concat
// NOFUSE:         dsdist.all_gather_start %arg0
// NOFUSE:         dsdist.all_gather_start %arg1
// NOFUSE-LABEL: func @gathers_of_two_phases_stay_apart

// The fused gather counts against the budgets as one buffer of both.
// LIVE-LABEL: func @layer_gathers_fused
// LIVE:         dsdist.all_gather_start %{{.*}} : tensor<1x12xf32>
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @layer_gathers_fused(%w: tensor<8xf32>, %b: tensor<4xf32>, %x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %gw = dsdist.all_gather %w over ["dp"] dim 0 {phase = "forward"} : tensor<8xf32> -> tensor<16xf32>
    %ww = tensor.expand_shape %gw [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
    %gb = dsdist.all_gather %b over ["dp"] dim 0 {phase = "forward"} : tensor<4xf32> -> tensor<8xf32>
    %bb = tensor.extract_slice %gb[0] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %y = dsnn.layer "h.0"("Block") -> tensor<4x4xf32> {
      %m = dsnn.matmul %x, %ww : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
      %a = dsnn.add %m, %bb : tensor<4x4xf32>, tensor<4xf32> -> tensor<4x4xf32>
      dsnn.yield %a : tensor<4x4xf32>
    }
    dsdist.release %ww : tensor<4x4xf32>
    dsdist.release %bb : tensor<4xf32>
    return %y : tensor<4x4xf32>
  }
}

// -----

// A forward gather and a backward one never fuse, nor do gathers with
// compute between them.
// CHECK-LABEL: func @gathers_of_two_phases_stay_apart
// CHECK-NOT:     tensor.concat
// CHECK:         dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "forward"}
// CHECK-NEXT:    dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "backward"}
// CHECK-NEXT:    dsdist.all_gather_start %arg1
// CHECK-NOT:     tensor.concat
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @gathers_of_two_phases_stay_apart(%w: tensor<8xf32>, %v: tensor<8xf32>, %x: tensor<16xf32>) -> tensor<16xf32> {
    %g0 = dsdist.all_gather %w over ["dp"] dim 0 {phase = "forward"} : tensor<8xf32> -> tensor<16xf32>
    %g1 = dsdist.all_gather %w over ["dp"] dim 0 {phase = "backward"} : tensor<8xf32> -> tensor<16xf32>
    %a = dsnn.mul %x, %g0 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %g2 = dsdist.all_gather %v over ["dp"] dim 0 {phase = "backward"} : tensor<8xf32> -> tensor<16xf32>
    %b = dsnn.mul %a, %g1 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    %c = dsnn.mul %b, %g2 : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    dsdist.release %g0 : tensor<16xf32>
    dsdist.release %g1 : tensor<16xf32>
    dsdist.release %g2 : tensor<16xf32>
    return %c : tensor<16xf32>
  }
}

// -----

// Selective unsharding: each parameter is gathered in the forward and again
// in the backward. With room under the budget the forward buffer stays for
// the backward; the smaller parameter goes first (its gather is mostly
// start-up: the most predicted time per byte). The original peak is both
// buffers, 32 + 512 B; a budget of 576 B has room for the small one only.
// UNSHARD-LABEL: func @backward_reuses_forward_gather
// UNSHARD:         %[[HA:.*]] = dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "forward"}
// UNSHARD:         %[[HB:.*]] = dsdist.all_gather_start %arg1 over ["dp"] dim 0 {phase = "forward"}
// UNSHARD-NOT:     %arg0
// UNSHARD:         dsdist.all_gather_start %arg1 over ["dp"] dim 0 {phase = "backward"}
// UNSHARD-NOT:     %arg0
// UNSHARD:         dsnn.layer "h.0.backward"
// UNSHARD:         return

// REUSE-LABEL: func @backward_reuses_forward_gather
// REUSE:         dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "backward"}
// REUSE-NOT:     phase = "backward"
// REUSE:         dsnn.layer "h.0.backward"

// No headroom (the budget is the peak), or no reuse distance: both backward
// gathers stay.
// KEEP-LABEL: func @backward_reuses_forward_gather
// KEEP:         dsdist.all_gather_start %arg0 over ["dp"] dim 0 {phase = "backward"}
// KEEP:         dsdist.all_gather_start %arg1 over ["dp"] dim 0 {phase = "backward"}

// With the default budget (most of the machine's memory) both stay live:
// no backward gather is left; so with the default reuse distance.
// ALL-LABEL: func @backward_reuses_forward_gather
// CHECK-LABEL: func @backward_reuses_forward_gather
// ALL-NOT:     phase = "backward"
// ALL:         dsnn.layer "h.0.backward"
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @backward_reuses_forward_gather(%a: tensor<4xf32>, %b: tensor<64xf32>, %x: tensor<8xf32>, %y: tensor<128xf32>) -> (tensor<8xf32>, tensor<128xf32>) {
    %fa = dsdist.all_gather %a over ["dp"] dim 0 {phase = "forward"} : tensor<4xf32> -> tensor<8xf32>
    %fb = dsdist.all_gather %b over ["dp"] dim 0 {phase = "forward"} : tensor<64xf32> -> tensor<128xf32>
    %o:2 = dsnn.layer "h.0"("Block") -> tensor<8xf32>, tensor<128xf32> {
      %p = dsnn.mul %x, %fa : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
      %q = dsnn.mul %y, %fb : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
      dsnn.yield %p, %q : tensor<8xf32>, tensor<128xf32>
    }
    dsdist.release %fa : tensor<8xf32>
    dsdist.release %fb : tensor<128xf32>
    %ba = dsdist.all_gather %a over ["dp"] dim 0 {phase = "backward"} : tensor<4xf32> -> tensor<8xf32>
    %bb = dsdist.all_gather %b over ["dp"] dim 0 {phase = "backward"} : tensor<64xf32> -> tensor<128xf32>
    %g:2 = dsnn.layer "h.0.backward"("Block") -> tensor<8xf32>, tensor<128xf32> {
      %p = dsnn.mul %o#0, %ba : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32>
      %q = dsnn.mul %o#1, %bb : tensor<128xf32>, tensor<128xf32> -> tensor<128xf32>
      dsnn.yield %p, %q : tensor<8xf32>, tensor<128xf32>
    }
    dsdist.release %ba : tensor<8xf32>
    dsdist.release %bb : tensor<128xf32>
    return %g#0, %g#1 : tensor<8xf32>, tensor<128xf32>
  }
}

// -----

// A bucket of gradients a call returns moves into the callee, cut where each
// gradient becomes ready (the predicted time of the two rows joined is
// above 1.2 x one row's), so h.1's part starts before h.0's backward; the
// callee returns the reduced pieces and the caller reads its slices there.
// CHECK-LABEL: func @grads
// CHECK-SAME:    -> (tensor<1x32768xf32>, tensor<1x32768xf32>)
// CHECK:         %[[G1:.*]] = dsnn.layer "h.1.backward"
// CHECK:         %[[E1:.*]] = tensor.expand_shape %[[G1]]
// CHECK-NEXT:    %[[H1:.*]] = dsdist.reduce_scatter_start avg %[[E1]] over ["dp"] dim 0 : tensor<2x32768xf32>
// CHECK-NEXT:    %[[G0:.*]] = dsnn.layer "h.0.backward"
// CHECK:         %[[E0:.*]] = tensor.expand_shape %[[G0]]
// CHECK-NEXT:    %[[H0:.*]] = dsdist.reduce_scatter_start avg %[[E0]]
// CHECK-NEXT:    %[[R1:.*]] = dsdist.wait %[[H1]]
// CHECK-NEXT:    %[[R0:.*]] = dsdist.wait %[[H0]]
// CHECK-NEXT:    return %[[R1]], %[[R0]]
// CHECK-LABEL: func @step
// CHECK-NEXT:    %[[C:.*]]:2 = call @grads(%arg0) : (tensor<65536xf32>) -> (tensor<1x32768xf32>, tensor<1x32768xf32>)
// CHECK-NEXT:    tensor.extract_slice %[[C]]#0[0, 0] [1, 32768] [1, 1]
// CHECK-NEXT:    tensor.extract_slice %[[C]]#1[0, 0] [1, 32768] [1, 1]
// CHECK-NOT:     dsdist.reduce

// With reduce-bucket-size 65536 (one bucket row of 2 x 32768) h.1's
// reduction is waited before h.0's starts, so h.1's whole gradient dies
// there rather than at the return.
// BUCKET-LABEL: func @grads(
// BUCKET:         %[[H1:.*]] = dsdist.reduce_scatter_start avg
// BUCKET-NEXT:    %[[G0:.*]] = dsnn.layer "h.0.backward"
// BUCKET:         %[[E0:.*]] = tensor.expand_shape %[[G0]]
// BUCKET-NEXT:    %[[R1:.*]] = dsdist.wait %[[H1]]
// BUCKET-NEXT:    %[[H0:.*]] = dsdist.reduce_scatter_start avg %[[E0]]
// BUCKET-NEXT:    %[[R0:.*]] = dsdist.wait %[[H0]]
// BUCKET-NEXT:    return %[[R1]], %[[R0]]

// NORED-LABEL: func @grads
// NORED-NOT:     dsdist
// NORED-LABEL: func @step
// NORED:         dsdist.reduce_scatter avg %{{.*}} : tensor<2x65536xf32>
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @grads(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>) {
    %g1 = dsnn.layer "h.1.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %x, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    %g0 = dsnn.layer "h.0.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %g1, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    return %g1, %g0 : tensor<65536xf32>, tensor<65536xf32>
  }
  func.func @step(%x: tensor<65536xf32>) -> (tensor<32768xf32>, tensor<32768xf32>) {
    %r:2 = call @grads(%x) : (tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>)
    %e1 = tensor.expand_shape %r#0 [[0, 1]] output_shape [2, 32768] : tensor<65536xf32> into tensor<2x32768xf32>
    %e0 = tensor.expand_shape %r#1 [[0, 1]] output_shape [2, 32768] : tensor<65536xf32> into tensor<2x32768xf32>
    %c = tensor.concat dim(1) %e1, %e0 : (tensor<2x32768xf32>, tensor<2x32768xf32>) -> tensor<2x65536xf32>
    %rs = dsdist.reduce_scatter avg %c over ["dp"] dim 0 : tensor<2x65536xf32> -> tensor<1x65536xf32>
    %s1 = tensor.extract_slice %rs[0, 0] [1, 32768] [1, 1] : tensor<1x65536xf32> to tensor<1x32768xf32>
    %s0 = tensor.extract_slice %rs[0, 32768] [1, 32768] [1, 1] : tensor<1x65536xf32> to tensor<1x32768xf32>
    %f1 = tensor.collapse_shape %s1 [[0, 1]] : tensor<1x32768xf32> into tensor<32768xf32>
    %f0 = tensor.collapse_shape %s0 [[0, 1]] : tensor<1x32768xf32> into tensor<32768xf32>
    return %f1, %f0 : tensor<32768xf32>, tensor<32768xf32>
  }
}

// -----

// With two calls (gradient accumulation) the gradients the callee returns
// are not yet the ones to reduce: the bucket stays in the caller.
// CHECK-LABEL: func @grads_twice
// CHECK-SAME:    -> tensor<16xf32>
// CHECK-NOT:     dsdist
// CHECK-LABEL: func @step_twice
// CHECK:         dsdist.reduce_scatter_start avg
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @grads_twice(%x: tensor<16xf32>) -> tensor<16xf32> {
    %g = dsnn.mul %x, %x : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
    return %g : tensor<16xf32>
  }
  func.func @step_twice(%x: tensor<16xf32>) -> tensor<1x8xf32> {
    %a = call @grads_twice(%x) : (tensor<16xf32>) -> tensor<16xf32>
    %b = call @grads_twice(%a) : (tensor<16xf32>) -> tensor<16xf32>
    %e = tensor.expand_shape %b [[0, 1]] output_shape [2, 8] : tensor<16xf32> into tensor<2x8xf32>
    %c = tensor.concat dim(1) %e : (tensor<2x8xf32>) -> tensor<2x8xf32>
    %rs = dsdist.reduce_scatter avg %c over ["dp"] dim 0 : tensor<2x8xf32> -> tensor<1x8xf32>
    %s = tensor.extract_slice %rs[0, 0] [1, 8] [1, 1] : tensor<1x8xf32> to tensor<1x8xf32>
    return %s : tensor<1x8xf32>
  }
}

// -----

// An all-reduce bucket (ZeRO 0 and 1: flat gradients joined along dim 0)
// moves into the callee as the reduce-scatter does; on 2 ranks it is cut
// where each gradient becomes ready, each piece the same elements summed
// once (a + b in any algorithm).
// CHECK-LABEL: func @flat_grads
// CHECK-SAME:    -> (tensor<65536xf32>, tensor<65536xf32>)
// CHECK:         %[[G1:.*]] = dsnn.layer "h.1.backward"
// CHECK:         %[[H1:.*]] = dsdist.all_reduce_start avg %[[G1]] over ["dp"] : tensor<65536xf32>
// CHECK-NEXT:    %[[G0:.*]] = dsnn.layer "h.0.backward"
// CHECK:         %[[C0:.*]] = tensor.collapse_shape %[[G0]]
// CHECK-NEXT:    %[[H0:.*]] = dsdist.all_reduce_start avg %[[C0]]
// CHECK-NEXT:    %[[R1:.*]] = dsdist.wait %[[H1]]
// CHECK-NEXT:    %[[R0:.*]] = dsdist.wait %[[H0]]
// CHECK-NEXT:    return %[[R1]], %[[R0]]
// CHECK-LABEL: func @flat_step
// CHECK-NEXT:    %[[C:.*]]:2 = call @flat_grads(%arg0)
// CHECK-NEXT:    tensor.extract_slice %[[C]]#0[0] [65536] [1]
// CHECK-NEXT:    tensor.extract_slice %[[C]]#1[0] [65536] [1]
// CHECK-NOT:     dsdist.all_reduce

// NORED-LABEL: func @flat_grads
// NORED-NOT:     dsdist
// NORED-LABEL: func @flat_step
// NORED:         dsdist.all_reduce avg %{{.*}} : tensor<131072xf32>
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @flat_grads(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<256x256xf32>) {
    %g1 = dsnn.layer "h.1.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %x, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    %g0 = dsnn.layer "h.0.backward"("Block") -> tensor<256x256xf32> {
      %a = dsnn.mul %g1, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      %e = tensor.expand_shape %a [[0, 1]] output_shape [256, 256] : tensor<65536xf32> into tensor<256x256xf32>
      dsnn.yield %e : tensor<256x256xf32>
    }
    return %g1, %g0 : tensor<65536xf32>, tensor<256x256xf32>
  }
  func.func @flat_step(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>) {
    %r:2 = call @flat_grads(%x) : (tensor<65536xf32>) -> (tensor<65536xf32>, tensor<256x256xf32>)
    %f0 = tensor.collapse_shape %r#1 [[0, 1]] : tensor<256x256xf32> into tensor<65536xf32>
    %c = tensor.concat dim(0) %r#0, %f0 : (tensor<65536xf32>, tensor<65536xf32>) -> tensor<131072xf32>
    %ar = dsdist.all_reduce avg %c over ["dp"] : tensor<131072xf32>
    %s1 = tensor.extract_slice %ar[0] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    %s0 = tensor.extract_slice %ar[65536] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    return %s1, %s0 : tensor<65536xf32>, tensor<65536xf32>
  }
}

// -----

// On 3 ranks the bucket moves whole: the sum order of Open MPI's
// all-reduce depends on the message size, so a piece could round
// differently. It still starts as soon as its last gradient exists.
// CHECK-LABEL: func @flat_grads3
// CHECK-SAME:    -> tensor<131072xf32>
// CHECK:         dsnn.layer "h.0.backward"
// CHECK:         %[[C:.*]] = tensor.concat dim(0)
// CHECK-NEXT:    %[[H:.*]] = dsdist.all_reduce_start avg %[[C]] over ["dp"] : tensor<131072xf32>
// CHECK-NEXT:    %[[R:.*]] = dsdist.wait %[[H]]
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func @flat_step3
// CHECK-NEXT:    %[[S:.*]] = call @flat_grads3(%arg0)
// CHECK-NEXT:    tensor.extract_slice %[[S]][0] [65536] [1]
// CHECK-NEXT:    tensor.extract_slice %[[S]][65536] [65536] [1]
module attributes {dsdist.grid = #dsdist.grid<dp = 3>} {
  func.func @flat_grads3(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>) {
    %g1 = dsnn.layer "h.1.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %x, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    %g0 = dsnn.layer "h.0.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %g1, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    return %g1, %g0 : tensor<65536xf32>, tensor<65536xf32>
  }
  func.func @flat_step3(%x: tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>) {
    %r:2 = call @flat_grads3(%x) : (tensor<65536xf32>) -> (tensor<65536xf32>, tensor<65536xf32>)
    %c = tensor.concat dim(0) %r#0, %r#1 : (tensor<65536xf32>, tensor<65536xf32>) -> tensor<131072xf32>
    %ar = dsdist.all_reduce avg %c over ["dp"] : tensor<131072xf32>
    %s1 = tensor.extract_slice %ar[0] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    %s0 = tensor.extract_slice %ar[65536] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    return %s1, %s0 : tensor<65536xf32>, tensor<65536xf32>
  }
}

// -----

// Gradient accumulation: the loop sums two micro-batches' gradients, then
// scales by 1/2 and reduces. The last micro-batch runs after the loop
// (which stops one early), calling its own copy of the gradient function;
// the sum into the accumulator (passed in), the scaling (its constant
// cloned) and the bucket's pieces move into that copy, in the same order.
// CHECK-LABEL: func @acc_grads(
// CHECK-NOT:     dsdist
// CHECK:         return
// CHECK-LABEL: func @acc_step
// CHECK:         %[[L:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[LAST:[^ ]+]] step
// CHECK:           func.call @acc_grads(
// CHECK:         %[[XL:.*]] = tensor.extract_slice %arg0[%[[LAST]], 0]
// CHECK-NEXT:    %[[C:.*]]:3 = call @acc_grads_last_micro_batch(%[[XL]], %[[L]]#1, %[[L]]#2)
// CHECK:         dsnn.add %[[L]]#0, %[[C]]#0
// CHECK-NOT:     dsdist.all_reduce_start avg
// CHECK:         tensor.extract_slice %[[C]]#1[0] [65536] [1]
// CHECK:         tensor.extract_slice %[[C]]#2[0] [65536] [1]
// CHECK-LABEL: func @acc_grads_last_micro_batch(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<65536xf32>, %[[A1:[^:]*]]: tensor<65536xf32>, %[[A0:[^:]*]]: tensor<65536xf32>)
// CHECK:         %[[G1:.*]] = dsnn.layer "h.1.backward"
// CHECK:         %[[S1:.*]] = dsnn.add %[[A1]], %[[G1]]
// CHECK-NEXT:    %[[HALF:.*]] = arith.constant dense<5.000000e-01>
// CHECK-NEXT:    %[[M1:.*]] = dsnn.mul %[[S1]], %[[HALF]]
// CHECK-NEXT:    dsdist.all_reduce_start avg %[[M1]]
// CHECK-NEXT:    dsnn.layer "h.0.backward"
// CHECK:         dsdist.all_reduce_start avg
// CHECK:         dsdist.wait
// CHECK:         dsdist.wait
// CHECK-NEXT:    return
// NORED-LABEL: func @acc_step
// NORED-NOT:     last_micro_batch
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @acc_grads(%x: tensor<65536xf32>) -> (tensor<f32>, tensor<65536xf32>, tensor<65536xf32>) {
    %l = arith.constant dense<1.0> : tensor<f32>
    %g1 = dsnn.layer "h.1.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %x, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    %g0 = dsnn.layer "h.0.backward"("Block") -> tensor<65536xf32> {
      %a = dsnn.mul %g1, %x : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      dsnn.yield %a : tensor<65536xf32>
    }
    return %l, %g1, %g0 : tensor<f32>, tensor<65536xf32>, tensor<65536xf32>
  }
  func.func @acc_step(%x: tensor<2x65536xf32>) -> (tensor<f32>, tensor<65536xf32>, tensor<65536xf32>) {
    %zl = arith.constant dense<0.0> : tensor<f32>
    %z = arith.constant dense<0.0> : tensor<65536xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %acc:3 = scf.for %i = %c0 to %c2 step %c1 iter_args(%al = %zl, %a1 = %z, %a0 = %z) -> (tensor<f32>, tensor<65536xf32>, tensor<65536xf32>) {
      %xi = tensor.extract_slice %x[%i, 0] [1, 65536] [1, 1] : tensor<2x65536xf32> to tensor<65536xf32>
      %r:3 = func.call @acc_grads(%xi) : (tensor<65536xf32>) -> (tensor<f32>, tensor<65536xf32>, tensor<65536xf32>)
      %sl = dsnn.add %al, %r#0 : tensor<f32>, tensor<f32> -> tensor<f32>
      %s1 = dsnn.add %a1, %r#1 : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      %s0 = dsnn.add %a0, %r#2 : tensor<65536xf32>, tensor<65536xf32> -> tensor<65536xf32>
      scf.yield %sl, %s1, %s0 : tensor<f32>, tensor<65536xf32>, tensor<65536xf32>
    }
    %half = arith.constant dense<0.5> : tensor<f32>
    %ml = dsnn.mul %acc#0, %half : tensor<f32>, tensor<f32> -> tensor<f32>
    %m1 = dsnn.mul %acc#1, %half : tensor<65536xf32>, tensor<f32> -> tensor<65536xf32>
    %m0 = dsnn.mul %acc#2, %half : tensor<65536xf32>, tensor<f32> -> tensor<65536xf32>
    %c = tensor.concat dim(0) %m1, %m0 : (tensor<65536xf32>, tensor<65536xf32>) -> tensor<131072xf32>
    %ar = dsdist.all_reduce avg %c over ["dp"] : tensor<131072xf32>
    %s1 = tensor.extract_slice %ar[0] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    %s0 = tensor.extract_slice %ar[65536] [65536] [1] : tensor<131072xf32> to tensor<65536xf32>
    return %ml, %s1, %s0 : tensor<f32>, tensor<65536xf32>, tensor<65536xf32>
  }
}
