// RUN: ds-opt %s --ds-lower-train-to-linalg --split-input-file | FileCheck %s --implicit-check-not="dstrain."

// Both outcomes are computed and the overflow flag selects; skip is the flag.
// CHECK-LABEL: func @dynamic
// CHECK-SAME:    (%[[S:[^:]*]]: tensor<f32>, %[[G:[^:]*]]: tensor<i64>, %[[H:[^:]*]]: tensor<i64>, %[[O:[^:]*]]: tensor<i1>)
// CHECK-DAG:     %[[SV:.*]] = tensor.extract %[[S]][]
// CHECK-DAG:     %[[GV:.*]] = tensor.extract %[[G]][]
// CHECK-DAG:     %[[HV:.*]] = tensor.extract %[[H]][]
// CHECK-DAG:     %[[OV:.*]] = tensor.extract %[[O]][]
// On overflow with hysteresis used up: max(scale / 2, min_scale).
// CHECK:         %[[USED:.*]] = arith.cmpi sle, %[[HV]], %c1_i64
// CHECK:         %[[HALF:.*]] = arith.divf %[[SV]], %cst
// CHECK:         %[[DOWN:.*]] = arith.maximumf %[[HALF]], %{{.*}}
// CHECK:         %[[OSCALE:.*]] = arith.select %[[USED]], %[[DOWN]], %[[SV]]
// A clean step grows the scale every scale_window clean steps.
// CHECK:         %[[GOOD:.*]] = arith.addi %[[GV]], %c1_i64
// CHECK:         %[[REM:.*]] = arith.remsi %[[GOOD]], %c1000_i64
// CHECK:         %[[GROW:.*]] = arith.cmpi eq, %[[REM]], %c0_i64
// CHECK:         %[[UP:.*]] = arith.mulf %[[SV]], %cst
// CHECK:         %[[CSCALE:.*]] = arith.select %[[GROW]], %[[UP]], %[[SV]]
// CHECK:         %[[NS:.*]] = arith.select %[[OV]], %[[OSCALE]], %[[CSCALE]] : f32
// CHECK:         %[[NG:.*]] = arith.select %[[OV]], %c0_i64, %[[GOOD]] : i64
// CHECK:         %[[NH:.*]] = arith.select %[[OV]]
// CHECK:         %[[TS:.*]] = tensor.from_elements %[[NS]] : tensor<f32>
// CHECK:         %[[TG:.*]] = tensor.from_elements %[[NG]] : tensor<i64>
// CHECK:         %[[TH:.*]] = tensor.from_elements %[[NH]] : tensor<i64>
// CHECK:         return %[[TS]], %[[TG]], %[[TH]], %[[O]]
func.func @dynamic(%s: tensor<f32>, %g: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) -> (tensor<f32>, tensor<i64>, tensor<i64>, tensor<i1>) {
  %s1, %g1, %h1, %k = dstrain.loss_scale_update scale %s good_steps %g hysteresis_left %h overflow %o {scale_window = 1000 : i64, hysteresis = 2 : i64}
  return %s1, %g1, %h1, %k : tensor<f32>, tensor<i64>, tensor<i64>, tensor<i1>
}

// -----

// A static scale is a constant; the state passes through.
// CHECK-LABEL: func @static
// CHECK-SAME:    (%[[S:[^:]*]]: tensor<f32>, %[[G:[^:]*]]: tensor<i64>, %[[H:[^:]*]]: tensor<i64>, %[[O:[^:]*]]: tensor<i1>)
// CHECK:         %[[C:.*]] = arith.constant dense<1.280000e+02> : tensor<f32>
// CHECK:         return %[[C]], %[[G]], %[[H]], %[[O]]
func.func @static(%s: tensor<f32>, %g: tensor<i64>, %h: tensor<i64>, %o: tensor<i1>) -> (tensor<f32>, tensor<i64>, tensor<i64>, tensor<i1>) {
  %s1, %g1, %h1, %k = dstrain.loss_scale_update scale %s good_steps %g hysteresis_left %h overflow %o {static_scale = 128.0 : f64}
  return %s1, %g1, %h1, %k : tensor<f32>, tensor<i64>, tensor<i64>, tensor<i1>
}
