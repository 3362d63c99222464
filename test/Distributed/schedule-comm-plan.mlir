// The plan ds-schedule-comm prints (print-plan, or compile.debug_log in the
// config): per collective where it starts and where it is waited, its
// predicted time from the cost model (the defaults: 20 us per ring step,
// 10 Gbit/s; an all-gather of B bytes on 2 ranks is one step and B/2 bytes
// on the wire), the compute between start and wait that hides it, and per
// function the peak of gathered bytes live at once.
// RUN: ds-opt %s --ds-schedule-comm="print-plan=true" -o /dev/null 2>&1 | FileCheck %s
// With a budget of one layer the gathers cannot overlap: the second starts
// after the first layer, and the peak is one layer's buffer.
// RUN: ds-opt %s --ds-schedule-comm="print-plan=true max-live-parameters=1040" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ONE

// 1024 x 4 B gathered: 20 us + 2048 B at 1.25 GB/s = 21.6 us. Between
// the second start and its wait, layer h.0 computes 2 x 32^3 (matmul) +
// 32^2 (add) = 66560 flop, 1.3 us at the 50 GFLOP/s the plan assumes.
// CHECK: remark: ds-schedule-comm: all_gather of 4096 B on 2 ranks: starts before op 2 (dsnn.layer "h.0"), waited before op 2 (dsnn.layer "h.0"); predicted 21.6 us, overlapping 0.0 us of compute (0 flop)
// CHECK: remark: ds-schedule-comm: all_gather of 4096 B on 2 ranks: starts before op 2 (dsnn.layer "h.0"), waited before op 6 (dsnn.layer "h.1"); predicted 21.6 us, overlapping 1.3 us of compute (66560 flop)
// CHECK: remark: ds-schedule-comm: 2 collectives, predicted 43.3 us of communication, 1.3 us of it hidden by compute; peak live gathered parameters 8192 B

// ONE: starts before op 6 (dsnn.layer "h.1"), waited before op 6 (dsnn.layer "h.1"); predicted 21.6 us, overlapping 0.0 us
// ONE: peak live gathered parameters 4096 B
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @two_layers(%w0: tensor<512xf32>, %w1: tensor<512xf32>, %x: tensor<32x32xf32>) -> tensor<32x32xf32> {
    %g0 = dsdist.all_gather %w0 over ["dp"] dim 0 {phase = "forward"} : tensor<512xf32> -> tensor<1024xf32>
    %v0 = tensor.expand_shape %g0 [[0, 1]] output_shape [32, 32] : tensor<1024xf32> into tensor<32x32xf32>
    %y0 = dsnn.layer "h.0"("Block") -> tensor<32x32xf32> {
      %m = dsnn.matmul %x, %v0 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      %a = dsnn.add %m, %x : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      dsnn.yield %a : tensor<32x32xf32>
    }
    dsdist.release %v0 : tensor<32x32xf32>
    %g1 = dsdist.all_gather %w1 over ["dp"] dim 0 {phase = "forward"} : tensor<512xf32> -> tensor<1024xf32>
    %v1 = tensor.expand_shape %g1 [[0, 1]] output_shape [32, 32] : tensor<1024xf32> into tensor<32x32xf32>
    %y1 = dsnn.layer "h.1"("Block") -> tensor<32x32xf32> {
      %m = dsnn.matmul %y0, %v1 : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
      dsnn.yield %m : tensor<32x32xf32>
    }
    dsdist.release %v1 : tensor<32x32xf32>
    return %y1 : tensor<32x32xf32>
  }
}
