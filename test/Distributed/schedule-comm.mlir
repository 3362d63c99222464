// Two ZeRO-3 layers as ds-zero leaves them: each parameter gathered just
// before its layer and released after it.
// RUN: ds-opt %s --ds-schedule-comm --split-input-file | FileCheck %s
// A budget of one gathered layer: layer 1's gather may start only once
// layer 0's buffer is released.
// RUN: ds-opt %s --ds-schedule-comm="max-live-parameters=16" --split-input-file | FileCheck %s --check-prefix=LIVE
// No room to prefetch: each gather starts where it was.
// RUN: ds-opt %s --ds-schedule-comm="prefetch-bucket-size=8" --split-input-file | FileCheck %s --check-prefix=NONE
// RUN: ds-opt %s --ds-schedule-comm="overlap-reduce=false" --split-input-file | FileCheck %s --check-prefix=NORED

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
