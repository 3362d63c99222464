// RUN: ds-opt %s --ds-inline-glue --split-input-file | FileCheck %s

// The glue called once moves into its caller, its arguments replaced by the
// call's operands; the layer function it calls stays a call.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME:    %[[P:.*]]: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[G:.*]] = call @layer_Block(%[[X]], %[[P]])
// CHECK-NEXT:    %[[S:.*]] = arith.addf %[[G]], %[[P]]
// CHECK-NEXT:    return %[[S]], %[[G]]
// CHECK-NOT:   func.func private @forward_backward
// CHECK:       func.func private @layer_Block(
func.func @train_step(%p: tensor<4xf32>, %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>) {
  %g = call @forward_backward(%p, %x)
      : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = arith.addf %g, %p : tensor<4xf32>
  return %s, %g : tensor<4xf32>, tensor<4xf32>
}
func.func private @forward_backward(%p: tensor<4xf32>, %x: tensor<4xf32>)
    -> tensor<4xf32> {
  %g = call @layer_Block(%x, %p)
      : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func private @layer_Block(%x: tensor<4xf32>, %p: tensor<4xf32>)
    -> tensor<4xf32> attributes {dsnn.layer_count = 1 : i64} {
  %y = arith.mulf %x, %p : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Inside the micro-batch loop too.
// CHECK-LABEL: func.func @in_loop(
// CHECK:         scf.for
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      scf.yield
// CHECK-NOT:   @forward_backward
func.func @in_loop(%p: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %p) -> tensor<4xf32> {
    %g = func.call @forward_backward(%p) : (tensor<4xf32>) -> tensor<4xf32>
    %n = arith.addf %acc, %g : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func private @forward_backward(%p: tensor<4xf32>) -> tensor<4xf32> {
  %g = arith.mulf %p, %p : tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// What stays: a function called twice, a layer function called once, and
// a declaration.
// CHECK-LABEL: func.func @stays(
// CHECK-NEXT:    call @twice(
// CHECK-NEXT:    call @twice(
// CHECK-NEXT:    call @layer_Once(
// CHECK-NEXT:    call @external(
// CHECK-DAG:   func.func private @twice(
// CHECK-DAG:   func.func private @layer_Once(
// CHECK-DAG:   func.func private @external(
func.func @stays(%p: tensor<4xf32>) -> tensor<4xf32> {
  %a = call @twice(%p) : (tensor<4xf32>) -> tensor<4xf32>
  %b = call @twice(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %d = call @layer_Once(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %e = call @external(%d) : (tensor<4xf32>) -> tensor<4xf32>
  return %e : tensor<4xf32>
}
func.func private @twice(%p: tensor<4xf32>) -> tensor<4xf32> {
  %g = arith.mulf %p, %p : tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func private @layer_Once(%p: tensor<4xf32>) -> tensor<4xf32>
    attributes {dsnn.layer_count = 1 : i64} {
  %g = arith.mulf %p, %p : tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func private @external(tensor<4xf32>) -> tensor<4xf32>

// -----

// A public callee (the step contract's @forward_backward) is inlined and
// stays for other callers.
// CHECK-LABEL: func.func @step(
// CHECK-NEXT:    %[[G:.*]] = arith.mulf
// CHECK-NEXT:    return %[[G]]
// CHECK:       func.func @forward_backward(
func.func @step(%p: tensor<4xf32>) -> tensor<4xf32> {
  %g = call @forward_backward(%p) : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
func.func @forward_backward(%p: tensor<4xf32>) -> tensor<4xf32> {
  %g = arith.mulf %p, %p : tensor<4xf32>
  return %g : tensor<4xf32>
}
