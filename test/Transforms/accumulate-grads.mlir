// RUN: ds-opt %s --ds-accumulate-grads=steps=4 --split-input-file | FileCheck %s
// RUN: ds-opt %s --ds-accumulate-grads=steps=1 --split-input-file | FileCheck %s --check-prefix=ONE

// The micro-batch loop: batch args lead with 4, each iteration slices
// micro-batch %i, calls @forward_backward and sums; the mean is the sum
// times 1/4.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %[[W:.*]]: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight"
// CHECK-SAME:      %[[X:.*]]: tensor<4x2x8xf32>, %[[Y:.*]]: tensor<4x2x4xf32>)
// CHECK-SAME:      -> (tensor<f32>, tensor<4x8xf32>)
// CHECK-SAME:      attributes {dstrain.gradient_accumulation_steps = 4 : i64}
// CHECK-DAG:     %[[L0:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG:     %[[G0:.*]] = arith.constant dense<0.000000e+00> : tensor<4x8xf32>
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK:         %[[SUM:.*]]:2 = scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step %[[C1]] iter_args(%[[L:.*]] = %[[L0]], %[[G:.*]] = %[[G0]])
// CHECK-NEXT:      %[[XI:.*]] = tensor.extract_slice %[[X]][%[[I]], 0, 0] [1, 2, 8] [1, 1, 1] : tensor<4x2x8xf32> to tensor<2x8xf32>
// CHECK-NEXT:      %[[YI:.*]] = tensor.extract_slice %[[Y]][%[[I]], 0, 0] [1, 2, 4] [1, 1, 1] : tensor<4x2x4xf32> to tensor<2x4xf32>
// CHECK-NEXT:      %[[OUT:.*]]:2 = func.call @forward_backward(%[[W]], %[[XI]], %[[YI]])
// CHECK-NEXT:      %[[L1:.*]] = dsnn.add %[[L]], %[[OUT]]#0
// CHECK-NEXT:      %[[G1:.*]] = dsnn.add %[[G]], %[[OUT]]#1
// CHECK-NEXT:      scf.yield %[[L1]], %[[G1]]
// CHECK:         %[[Q:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %[[LOSS:.*]] = dsnn.mul %[[SUM]]#0, %[[Q]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    %[[GRAD:.*]] = dsnn.mul %[[SUM]]#1, %[[Q]] : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK-NEXT:    return %[[LOSS]], %[[GRAD]]

// With one micro-batch there is no loop and no scaling; the batch still
// leads with 1.
// ONE-LABEL: func.func @train_step(
// ONE-SAME:      %{{.*}}: tensor<1x2x8xf32>, %{{.*}}: tensor<1x2x4xf32>)
// ONE-NOT:     scf.for
// ONE:         %[[XI:.*]] = tensor.extract_slice %{{.*}}[0, 0, 0] [1, 2, 8] [1, 1, 1] : tensor<1x2x8xf32> to tensor<2x8xf32>
// ONE:         %[[OUT:.*]]:2 = call @forward_backward(%{{.*}}, %[[XI]], %{{.*}})
// ONE-NEXT:    return %[[OUT]]#0, %[[OUT]]#1
func.func @forward_backward(
    %w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "fc.weight", init = normal, std = 0.02>},
    %x: tensor<2x8xf32>, %y: tensor<2x4xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %l = arith.constant dense<1.0> : tensor<f32>
  %g = arith.constant dense<1.0> : tensor<4x8xf32>
  return %l, %g : tensor<f32>, tensor<4x8xf32>
}

// -----

// A gradient function with dropout takes its masks' key last: @train_step
// takes the step right after the parameters (not a batch argument) and
// passes step * 4 + micro-batch index, a new key per call.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:      %[[W:.*]]: tensor<4xf32> {dsnn.param
// CHECK-SAME:      %[[STEP:.*]]: tensor<i64> {dstrain.step}
// CHECK-SAME:      %[[X:.*]]: tensor<4x3x4xf32>)
// CHECK:         scf.for %[[I:.*]] = {{.*}} iter_args
// CHECK:           %[[S:.*]] = tensor.extract %[[STEP]][] : tensor<i64>
// CHECK:           %[[II:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:           %[[SN:.*]] = arith.muli %[[S]], %c4_i64 : i64
// CHECK:           %[[K:.*]] = arith.addi %[[SN]], %[[II]] : i64
// CHECK:           %[[KEY:.*]] = tensor.from_elements %[[K]] : tensor<i64>
// CHECK:           func.call @forward_backward(%[[W]], %{{.*}}, %[[KEY]])
func.func @forward_backward(%w: tensor<4xf32> {dsnn.param = #dsnn.param<name = "w", init = zeros>},
                            %x: tensor<3x4xf32>, %key: tensor<i64> {dsnn.rng_key})
    -> (tensor<f32>, tensor<4xf32>) {
  %y = dsnn.dropout %w key %key p 0.5 : tensor<4xf32>
  %l = dsnn.reduce_sum %y dims [0] : tensor<4xf32> -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<4xf32>
}
