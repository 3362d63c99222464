// RUN: ds-opt %s --ds-stack-layers --split-input-file | FileCheck %s

// Three equal layers chained through their result, on per-layer
// parameters: one loop carrying the activation; the parameter of layer %j
// is chosen among the three arguments.
// CHECK-LABEL: func @forward_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[W0:.*]]: tensor<4xf32>, %[[W1:.*]]: tensor<4xf32>, %[[W2:.*]]: tensor<4xf32>)
// CHECK:         %[[OUT:.*]] = scf.for %[[J:.*]] = %{{.*}} to %c3 step %{{.*}} iter_args(%[[H:.*]] = %[[X]]) -> (tensor<4xf32>)
// CHECK:           %[[W:.*]] = scf.index_switch %[[J]] -> tensor<4xf32>
// CHECK-NEXT:      case 0 {
// CHECK-NEXT:        scf.yield %[[W0]]
// CHECK:           case 1 {
// CHECK-NEXT:        scf.yield %[[W1]]
// CHECK:           default {
// CHECK-NEXT:        scf.yield %[[W2]]
// CHECK:           %[[Y:.*]] = dsnn.layer "h.0"("Block") -> tensor<4xf32> attributes {dsnn.iteration_names = ["h.0", "h.1", "h.2"]}
// CHECK:             dsnn.mul %[[H]], %[[W]]
// CHECK:           scf.yield %[[Y]]
// CHECK-NOT:     dsnn.layer
// CHECK:         return %[[OUT]]
func.func @forward_chain(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                         %w1: tensor<4xf32>, %w2: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %1 = dsnn.layer "h.1" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %2 = dsnn.layer "h.2" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %1, %w2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  return %2 : tensor<4xf32>
}

// -----

// The backward run walks the layers in reverse (layer index 1 - %j): it
// reads the forward loop's stacked saved result and stacked carried input
// of the same layer, the parameter of that layer, and stacks its
// gradients, which the function returns as slices (layer 0's at 0, layer
// 1's at 1).
// CHECK-LABEL: func @backward_reads_saved
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>, %[[W0:.*]]: tensor<4xf32>, %[[W1:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<4xf32>)
// CHECK:         %[[F:.*]]:3 = scf.for %[[J:.*]] = {{.*}} iter_args(%[[H:.*]] = %[[X]], %[[SE:.*]] = %{{.*}}, %[[SX:.*]] = %{{.*}}) -> (tensor<4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
// CHECK:           %[[Y:.*]]:2 = dsnn.layer "h.0"("Block")
// CHECK:           %[[SE2:.*]] = tensor.insert_slice %[[Y]]#1 into %[[SE]][%[[J]], 0] [1, 4] [1, 1]
// CHECK:           %[[SX2:.*]] = tensor.insert_slice %[[H]] into %[[SX]][%[[J]], 0] [1, 4] [1, 1]
// CHECK:           scf.yield %[[Y]]#0, %[[SE2]], %[[SX2]]
// CHECK:         %[[B:.*]]:2 = scf.for %[[I:.*]] = {{.*}} iter_args(%[[G:.*]] = %[[DY]], %[[SW:.*]] = %{{.*}}) -> (tensor<4xf32>, tensor<2x4xf32>)
// CHECK:           %[[K:.*]] = arith.subi %c1{{.*}}, %[[I]] : index
// CHECK:           %[[E:.*]] = tensor.extract_slice %[[F]]#1[%[[K]], 0]
// CHECK:           %[[W:.*]] = scf.index_switch %[[K]]
// CHECK-NEXT:      case 0 {
// CHECK-NEXT:        scf.yield %[[W0]]
// CHECK:           default {
// CHECK-NEXT:        scf.yield %[[W1]]
// CHECK:           %[[IN:.*]] = tensor.extract_slice %[[F]]#2[%[[K]], 0]
// CHECK:           %[[D:.*]]:2 = dsnn.layer "h.1.backward"("Block") -> tensor<4xf32>, tensor<4xf32> attributes {backward, dsnn.iteration_names = ["h.1.backward", "h.0.backward"]}
// CHECK:             dsnn.mul %[[G]], %[[E]]
// CHECK:             dsnn.mul %[[G]], %[[W]]
// CHECK:             dsnn.mul %{{.*}}, %[[IN]]
// CHECK:           %[[SW2:.*]] = tensor.insert_slice %[[D]]#1 into %[[SW]][%[[K]], 0]
// CHECK:           scf.yield %[[D]]#0, %[[SW2]]
// CHECK:         %[[DW1:.*]] = tensor.extract_slice %[[B]]#1[%c1{{.*}}, 0] [1, 4] [1, 1]
// CHECK:         %[[DW0:.*]] = tensor.extract_slice %[[B]]#1[%c0{{.*}}, 0] [1, 4] [1, 1]
// CHECK:         return %[[B]]#0, %[[DW0]], %[[DW1]]
func.func @backward_reads_saved(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                                %w1: tensor<4xf32>, %dy: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0:2 = dsnn.layer "h.0" ("Block") -> tensor<4xf32>, tensor<4xf32> {
    %e = dsnn.exp %x : tensor<4xf32>
    %m = dsnn.mul %e, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m, %e : tensor<4xf32>, tensor<4xf32>
  }
  %1:2 = dsnn.layer "h.1" ("Block") -> tensor<4xf32>, tensor<4xf32> {
    %e = dsnn.exp %0#0 : tensor<4xf32>
    %m = dsnn.mul %e, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m, %e : tensor<4xf32>, tensor<4xf32>
  }
  %2:2 = dsnn.layer "h.1.backward" ("Block") -> tensor<4xf32>, tensor<4xf32> attributes {backward} {
    %dw = dsnn.mul %dy, %1#1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %de = dsnn.mul %dy, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %dx = dsnn.mul %de, %0#0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %dx, %dw : tensor<4xf32>, tensor<4xf32>
  }
  %3:2 = dsnn.layer "h.0.backward" ("Block") -> tensor<4xf32>, tensor<4xf32> attributes {backward} {
    %dw = dsnn.mul %2#0, %0#1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %de = dsnn.mul %2#0, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %dx = dsnn.mul %de, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %dx, %dw : tensor<4xf32>, tensor<4xf32>
  }
  return %3#0, %3#1, %2#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Different bodies, a single layer, and a layer reading a value that is
// neither shared, carried nor a per-layer argument: nothing changes.
// CHECK-LABEL: func @not_stacked
// CHECK-NOT:     scf.for
// CHECK-COUNT-4: dsnn.layer
// CHECK-NOT:     scf.for
func.func @not_stacked(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                       %w1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "a.0" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %1 = dsnn.layer "a.1" ("Block") -> tensor<4xf32> {
    %m = dsnn.add %0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %t = dsnn.exp %1 : tensor<4xf32>
  %2 = dsnn.layer "b.0" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %t, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %3 = dsnn.layer "b.1" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %2, %t : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  return %3 : tensor<4xf32>
}

// -----

// A layer holding a collective keeps its place.
// CHECK-LABEL: func @collective_not_stacked
// CHECK-NOT:     scf.for
module attributes {dsdist.grid = #dsdist.grid<dp = 2>} {
  func.func @collective_not_stacked(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                                    %w1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
      %m = dsnn.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %r = dsdist.all_reduce sum %m over ["dp"] : tensor<4xf32>
      dsnn.yield %r : tensor<4xf32>
    }
    %1 = dsnn.layer "h.1" ("Block") -> tensor<4xf32> {
      %m = dsnn.mul %0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %r = dsdist.all_reduce sum %m over ["dp"] : tensor<4xf32>
      dsnn.yield %r : tensor<4xf32>
    }
    return %1 : tensor<4xf32>
  }
}
