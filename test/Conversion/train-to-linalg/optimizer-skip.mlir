// RUN: ds-opt %s --ds-lower-train-to-linalg | FileCheck %s
// RUN: ds-opt %s --ds-lower-train-to-linalg --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --ds-lower-optimizer-to-runtime | FileCheck %s --check-prefix=CALL

// Updates sharing a skip flag become one scf.if: the skipped branch yields
// the inputs, the other holds the updates side by side (so they stay one
// dsrt_adam_multi call).
// CHECK-LABEL: func.func @two_updates(
// CHECK:         %[[FLAG:.*]] = tensor.extract %arg6[] : tensor<i1>
// CHECK-NEXT:    %[[IF:.*]]:6 = scf.if %[[FLAG]]
// CHECK-NEXT:      scf.yield %arg0, %arg2, %arg3, %arg1, %arg4, %arg5 :
// CHECK-NEXT:    } else {
// CHECK-NEXT:      dstrain.adam %arg0, {{.*}} step %{{.*}} lr %{{.*}} :
// CHECK-NEXT:      dstrain.adam %arg1, {{.*}} step %{{.*}} lr %{{.*}} :
// CHECK-NEXT:      scf.yield
// CHECK:         return %[[IF]]#0, %[[IF]]#1, %[[IF]]#2, %[[IF]]#3, %[[IF]]#4, %[[IF]]#5
// CALL-LABEL: func.func @two_updates(
// CALL:          scf.if
// CALL-COUNT-1:    call @dsrt_adam_multi
// CALL-NOT:        call @dsrt_adam
func.func @two_updates(%p: tensor<8xf32>, %q: tensor<4xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>,
                       %mq: tensor<4xf32>, %vq: tensor<4xf32>, %skip: tensor<i1>, %g: tensor<8xf32>, %gq: tensor<4xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %t = arith.constant dense<1> : tensor<i64>
  %lr = arith.constant dense<0.1> : tensor<f32>
  %p1, %m1, %v1 = dstrain.adam %p, %g, %m, %v step %t lr %lr skip %skip : tensor<8xf32>, tensor<8xf32>
  %q1, %mq1, %vq1 = dstrain.adam %q, %gq, %mq, %vq step %t lr %lr skip %skip : tensor<4xf32>, tensor<4xf32>
  return %p1, %m1, %v1, %q1, %mq1, %vq1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
