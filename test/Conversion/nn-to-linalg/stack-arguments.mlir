// RUN: ds-opt %s --ds-stack-arguments --split-input-file -allow-unregistered-dialect | FileCheck %s

// Two layers' parameters %w0 and %w1 (positions 1 and 2), chosen by a
// switch in the loop, each updated by Adam from its slice of the stacked
// gradient %gs after clipping; %b is not per-layer. The step takes the
// parameters and each Adam state stacked where their first member was,
// clips and updates the stacks as wholes, and returns the stacked new
// values where the first member's was. The norm keeps the clip's order of
// summation: %gb before the run, then each layer's slice, then nothing.
// CHECK-LABEL: func @step
// CHECK-SAME:    (%[[X:[^:]*]]: tensor<4xf32>, %[[W:[^:]*]]: tensor<2x4xf32> {ds.stack = array<i64: 1, 2>},
// CHECK-SAME:     %[[B:[^:]*]]: tensor<4xf32>,
// CHECK-SAME:     %[[M:[^:]*]]: tensor<2x4xf32> {ds.stack = array<i64: 4, 6>}, %[[V:[^:]*]]: tensor<2x4xf32> {ds.stack = array<i64: 5, 7>},
// CHECK-SAME:     %[[MB:[^:]*]]: tensor<4xf32>, %[[VB:[^:]*]]: tensor<4xf32>, %[[GS:[^:]*]]: tensor<2x4xf32>, %[[GB:[^:]*]]: tensor<4xf32>, %[[T:[^:]*]]: tensor<i64>, %[[LR:[^:]*]]: tensor<f32>)
// CHECK-SAME:    -> (tensor<2x4xf32> {ds.stack = array<i64: 0, 1>}, tensor<4xf32>, tensor<2x4xf32> {ds.stack = array<i64: 3, 5>}, tensor<2x4xf32> {ds.stack = array<i64: 4, 6>}, tensor<4xf32>, tensor<4xf32>, tensor<f32>)
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK-NOT:       scf.index_switch
// CHECK:           %[[WJ:.*]] = tensor.extract_slice %[[W]][%[[J]], 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
// CHECK:           arith.mulf %{{.*}}, %[[WJ]]
// CHECK:         %[[S0:.*]] = dstrain.global_norm %[[GB]] squared : tensor<4xf32> -> tensor<f64>
// CHECK:         %[[S1:.*]] = scf.for %[[K:.*]] = %{{.*}} to %c2{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[S0]]) -> (tensor<f64>)
// CHECK:           %[[GK:.*]] = tensor.extract_slice %[[GS]][%[[K]], 0] [1, 4] [1, 1]
// CHECK:           %[[NEXT:.*]] = dstrain.global_norm %[[GK]] squared init %[[ACC]] : tensor<4xf32> -> tensor<f64>
// CHECK:           scf.yield %[[NEXT]]
// CHECK:         %[[SUM64:.*]] = tensor.extract %[[S1]][]
// CHECK:         %[[SUM:.*]] = arith.truncf %[[SUM64]] : f64 to f32
// CHECK:         %[[ROOT:.*]] = math.sqrt %[[SUM]]
// CHECK:         %[[NORM:.*]] = tensor.from_elements %[[ROOT]]
// CHECK:         %[[C:.*]]:2, %[[N:.*]] = dstrain.clip_grad_norm %[[GB]], %[[GS]] max_norm 1.000000e+00 norm %[[NORM]] : tensor<4xf32>, tensor<2x4xf32>
// CHECK:         %[[NW:[^,]*]], %[[NWM:[^,]*]], %[[NWV:[^ ]*]] = dstrain.adam %[[W]], %[[C]]#1, %[[M]], %[[V]] step %[[T]] lr %[[LR]] {weight_decay = 1.000000e-02 : f64} : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK:         %[[NB:[^,]*]], %[[NBM:[^,]*]], %[[NBV:[^ ]*]] = dstrain.adam %[[B]], %[[C]]#0, %[[MB]], %[[VB]]
// CHECK-NOT:     dstrain.adam
// CHECK:         return %[[NW]], %[[NB]], %[[NWM]], %[[NWV]], %[[NBM]], %[[NBV]], %[[N]]
func.func @step(%x: tensor<4xf32>, %w0: tensor<4xf32>, %w1: tensor<4xf32>,
                %b: tensor<4xf32>,
                %m0: tensor<4xf32>, %v0: tensor<4xf32>,
                %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                %mb: tensor<4xf32>, %vb: tensor<4xf32>,
                %gs: tensor<2x4xf32>, %gb: tensor<4xf32>,
                %t: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %h = scf.for %j = %c0 to %c2 step %c1 iter_args(%a = %x) -> (tensor<4xf32>) {
    %w = scf.index_switch %j -> tensor<4xf32>
    case 0 {
      scf.yield %w0 : tensor<4xf32>
    }
    default {
      scf.yield %w1 : tensor<4xf32>
    }
    %y = arith.mulf %a, %w : tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  }
  %g0 = tensor.extract_slice %gs[%c0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %g1 = tensor.extract_slice %gs[%c1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %c:3, %n = dstrain.clip_grad_norm %gb, %g0, %g1 max_norm 1.0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  %p0, %p0m, %p0v = dstrain.adam %w0, %c#1, %m0, %v0 step %t lr %lr {weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>
  %p1, %p1m, %p1v = dstrain.adam %w1, %c#2, %m1, %v1 step %t lr %lr {weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>
  %pb, %pbm, %pbv = dstrain.adam %b, %c#0, %mb, %vb step %t lr %lr {weight_decay = 0.01 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p0, %p1, %pb, %p0m, %p0v, %p1m, %p1v, %pbm, %pbv, %n
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<f32>
}

// -----

// Without clipping, the update reads the stacked gradient itself.
// CHECK-LABEL: func @unclipped
// CHECK-SAME:    %[[W:[^:]*]]: tensor<2x4xf32> {ds.stack = array<i64: 0, 1>}
// CHECK-SAME:    %[[GS:[^:]*]]: tensor<2x4xf32>, %{{[^:]*}}: tensor<i64>
// CHECK:         scf.for
// CHECK:           tensor.extract_slice %[[W]]
// CHECK-NOT:     tensor.extract_slice
// CHECK:         dstrain.adam %[[W]], %[[GS]], {{.*}} : tensor<2x4xf32>, tensor<2x4xf32>
func.func @unclipped(%w0: tensor<4xf32>, %w1: tensor<4xf32>,
                     %m0: tensor<4xf32>, %v0: tensor<4xf32>,
                     %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                     %gs: tensor<2x4xf32>, %t: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %j = %c0 to %c2 step %c1 {
    %w = scf.index_switch %j -> tensor<4xf32>
    case 0 {
      scf.yield %w0 : tensor<4xf32>
    }
    default {
      scf.yield %w1 : tensor<4xf32>
    }
    "test.use"(%w) : (tensor<4xf32>) -> ()
  }
  %g0 = tensor.extract_slice %gs[%c0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %g1 = tensor.extract_slice %gs[%c1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %p0, %p0m, %p0v = dstrain.adam %w0, %g0, %m0, %v0 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  %p1, %p1m, %p1v = dstrain.adam %w1, %g1, %m1, %v1 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p0, %p1, %p0m, %p0v, %p1m, %p1v
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>
}

// -----

// Left alone: the updates differ in weight decay.
// CHECK-LABEL: func @different_updates
// CHECK-SAME:    (%{{[^:]*}}: tensor<4xf32>, %{{[^:]*}}: tensor<4xf32>,
// CHECK:         scf.index_switch
// CHECK-COUNT-2: dstrain.adam
func.func @different_updates(%w0: tensor<4xf32>, %w1: tensor<4xf32>,
                             %m0: tensor<4xf32>, %v0: tensor<4xf32>,
                             %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                             %gs: tensor<2x4xf32>, %t: tensor<i64>,
                             %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %j = %c0 to %c2 step %c1 {
    %w = scf.index_switch %j -> tensor<4xf32>
    case 0 {
      scf.yield %w0 : tensor<4xf32>
    }
    default {
      scf.yield %w1 : tensor<4xf32>
    }
    "test.use"(%w) : (tensor<4xf32>) -> ()
  }
  %g0 = tensor.extract_slice %gs[%c0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %g1 = tensor.extract_slice %gs[%c1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %p0, %p0m, %p0v = dstrain.adam %w0, %g0, %m0, %v0 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  %p1, %p1m, %p1v = dstrain.adam %w1, %g1, %m1, %v1 step %t lr %lr {weight_decay = 0.1 : f64} : tensor<4xf32>, tensor<4xf32>
  return %p0, %p1, %p0m, %p0v, %p1m, %p1v
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>
}

// -----

// Left alone: the clip sums layer 1's gradient before layer 0's, an order
// a loop over the layers would not keep.
// CHECK-LABEL: func @not_layer_major
// CHECK:         scf.index_switch
// CHECK:         dstrain.clip_grad_norm %{{[^,]*}}, %{{[^ ]*}} max_norm
// CHECK-COUNT-2: dstrain.adam
func.func @not_layer_major(%w0: tensor<4xf32>, %w1: tensor<4xf32>,
                           %m0: tensor<4xf32>, %v0: tensor<4xf32>,
                           %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                           %gs: tensor<2x4xf32>, %t: tensor<i64>,
                           %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %j = %c0 to %c2 step %c1 {
    %w = scf.index_switch %j -> tensor<4xf32>
    case 0 {
      scf.yield %w0 : tensor<4xf32>
    }
    default {
      scf.yield %w1 : tensor<4xf32>
    }
    "test.use"(%w) : (tensor<4xf32>) -> ()
  }
  %g0 = tensor.extract_slice %gs[%c0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %g1 = tensor.extract_slice %gs[%c1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %c:2, %n = dstrain.clip_grad_norm %g1, %g0 max_norm 1.0 : tensor<4xf32>, tensor<4xf32>
  %p0, %p0m, %p0v = dstrain.adam %w0, %c#1, %m0, %v0 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  %p1, %p1m, %p1v = dstrain.adam %w1, %c#0, %m1, %v1 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p0, %p1, %p0m, %p0v, %p1m, %p1v, %n
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// Left alone: a parameter read by something else than its switches and
// its update (here, returned as it is).
// CHECK-LABEL: func @other_use
// CHECK:         scf.index_switch
// CHECK-COUNT-2: dstrain.adam
func.func @other_use(%w0: tensor<4xf32>, %w1: tensor<4xf32>,
                     %m0: tensor<4xf32>, %v0: tensor<4xf32>,
                     %m1: tensor<4xf32>, %v1: tensor<4xf32>,
                     %gs: tensor<2x4xf32>, %t: tensor<i64>, %lr: tensor<f32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %j = %c0 to %c2 step %c1 {
    %w = scf.index_switch %j -> tensor<4xf32>
    case 0 {
      scf.yield %w0 : tensor<4xf32>
    }
    default {
      scf.yield %w1 : tensor<4xf32>
    }
    "test.use"(%w) : (tensor<4xf32>) -> ()
  }
  %g0 = tensor.extract_slice %gs[%c0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %g1 = tensor.extract_slice %gs[%c1, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
  %p0, %p0m, %p0v = dstrain.adam %w0, %g0, %m0, %v0 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  %p1, %p1m, %p1v = dstrain.adam %w1, %g1, %m1, %v1 step %t lr %lr : tensor<4xf32>, tensor<4xf32>
  return %p0, %p1, %p0m, %p0v, %p1m, %p1v, %w0
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
