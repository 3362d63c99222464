// RUN: ds-opt %s --ds-outline-layers --split-input-file | FileCheck %s

// Two layers with one body on different parameters share one function;
// the arguments are what the body reads from above, in order of first use.
// CHECK-LABEL: func @same_body_shared
// CHECK:         %[[H0:.*]] = call @layer_Block(%arg0, %arg1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK:         %[[H1:.*]] = call @layer_Block(%[[H0]], %arg2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK:         return %[[H1]]
// CHECK:       func private @layer_Block(%[[X:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME:    dsnn.layer_count = 2 : i64, dsnn.layer_type = "Block", passthrough = ["noinline"]
// CHECK:         %[[M:.*]] = dsnn.mul %[[X]], %[[W]]
// CHECK:         %[[E:.*]] = dsnn.exp %[[M]]
// CHECK:         return %[[E]]
// CHECK-NOT:   func private @layer
func.func @same_body_shared(%x: tensor<4xf32>, %w0: tensor<4xf32>,
                            %w1: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %x, %w0 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %e = dsnn.exp %m : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  %1 = dsnn.layer "h.1" ("Block") -> tensor<4xf32> {
    %m = dsnn.mul %0, %w1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %e = dsnn.exp %m : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  return %1 : tensor<4xf32>
}

// -----

// Another body under the same type gets its own function; a backward layer
// is named so; every result (saved activations too) is a function result.
// CHECK-LABEL: func @different_bodies
// CHECK:         call @layer_Block(%arg0)
// CHECK:         call @layer_Block_1(%arg0)
// CHECK:         call @layer_Block_backward(%arg0)
// CHECK:       func private @layer_Block(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK-SAME:    dsnn.layer_count = 1 : i64
// CHECK:         dsnn.exp
// CHECK:       func private @layer_Block_1(%{{.*}}: tensor<4xf32>) -> tensor<4xf32>
// CHECK:         dsnn.tanh
// CHECK:       func private @layer_Block_backward(%{{.*}}: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
func.func @different_bodies(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = dsnn.layer "h.0" ("Block") -> tensor<4xf32> {
    %e = dsnn.exp %x : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  %1 = dsnn.layer "h.1" ("Block") -> tensor<4xf32> {
    %e = dsnn.tanh %x : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  %2:2 = dsnn.layer "h.0.backward" ("Block") -> tensor<4xf32>, tensor<4xf32> attributes {backward} {
    %e = dsnn.exp %x : tensor<4xf32>
    dsnn.yield %e, %x : tensor<4xf32>, tensor<4xf32>
  }
  return %0, %1, %2#0, %2#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A constant defined above is cloned into the function, not passed; a
// different constant is a different body.
// CHECK-LABEL: func @constants_cloned
// CHECK:         call @layer_Scale(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:         call @layer_Scale_1(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK:       func private @layer_Scale(%[[X:.*]]: tensor<4xf32>)
// CHECK:         %[[C:.*]] = arith.constant dense<2.000000e+00>
// CHECK:         dsnn.mul %[[X]], %[[C]]
// CHECK:       func private @layer_Scale_1(
// CHECK:         arith.constant dense<3.000000e+00>
func.func @constants_cloned(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %three = arith.constant dense<3.0> : tensor<4xf32>
  %0 = dsnn.layer "a" ("Scale") -> tensor<4xf32> {
    %m = dsnn.mul %x, %two : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  %1 = dsnn.layer "b" ("Scale") -> tensor<4xf32> {
    %m = dsnn.mul %x, %three : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    dsnn.yield %m : tensor<4xf32>
  }
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Layers in two functions with one body share a function too; a layer
// type that is not an identifier is made one.
// CHECK-LABEL: func @first
// CHECK:         call @layer_my_Block(%arg0)
// CHECK-LABEL: func @second
// CHECK:         call @layer_my_Block(%arg0)
// CHECK:       func private @layer_my_Block(
// CHECK-SAME:    dsnn.layer_count = 2 : i64, dsnn.layer_type = "my.Block"
func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "l" ("my.Block") -> tensor<4xf32> {
    %e = dsnn.exp %x : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "l" ("my.Block") -> tensor<4xf32> {
    %e = dsnn.exp %x : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Each top-level layer call is bracketed by the timeline's marks (libdsrt's
// dsrt_trace_begin(name, kind) and dsrt_trace_end(), which return at once
// unless ds-train --trace records): the name is a constant C string, kind 1
// for a backward layer. A layer inside another gets no marks, so equal outer
// bodies around differently named inner layers still share one function.
// CHECK-DAG:   llvm.mlir.global internal constant @[[OUTER0:.*]]("outer.0\00")
// CHECK-DAG:   llvm.mlir.global internal constant @[[OUTER1:.*]]("outer.0.backward\00")
// CHECK-DAG:   func.func private @dsrt_trace_begin(!llvm.ptr, i32)
// CHECK-DAG:   func.func private @dsrt_trace_end()
// CHECK-LABEL: func @marks
// CHECK:         %[[N0:.*]] = llvm.mlir.addressof @[[OUTER0]] : !llvm.ptr
// CHECK:         %[[K0:.*]] = arith.constant 0 : i32
// CHECK:         call @dsrt_trace_begin(%[[N0]], %[[K0]])
// CHECK-NEXT:    %[[F:.*]] = call @layer_Outer(%arg0)
// CHECK-NEXT:    call @dsrt_trace_end()
// CHECK:         %[[N1:.*]] = llvm.mlir.addressof @[[OUTER1]] : !llvm.ptr
// CHECK:         %[[K1:.*]] = arith.constant 1 : i32
// CHECK:         call @dsrt_trace_begin(%[[N1]], %[[K1]])
// CHECK-NEXT:    call @layer_Outer_backward(%[[F]])
// CHECK-NEXT:    call @dsrt_trace_end()
// CHECK:       func private @layer_Inner(
// CHECK:       func private @layer_Outer(
// CHECK-NOT:     dsrt_trace
// CHECK:         call @layer_Inner(
// CHECK-NOT:     dsrt_trace
// CHECK:         return
func.func @marks(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = dsnn.layer "outer.0" ("Outer") -> tensor<4xf32> {
    %i = dsnn.layer "outer.0.inner" ("Inner") -> tensor<4xf32> {
      %e = dsnn.exp %x : tensor<4xf32>
      dsnn.yield %e : tensor<4xf32>
    }
    %t = dsnn.tanh %i : tensor<4xf32>
    dsnn.yield %t : tensor<4xf32>
  }
  %1 = dsnn.layer "outer.0.backward" ("Outer") -> tensor<4xf32> attributes {backward} {
    %e = dsnn.exp %0 : tensor<4xf32>
    dsnn.yield %e : tensor<4xf32>
  }
  return %1 : tensor<4xf32>
}

// -----

// A layer ds-stack-layers made a loop body names each iteration's span:
// the names are one table of equal-width C strings (the longest name and
// its NUL), and iteration %j marks the one at %j x width.
// CHECK-DAG:   llvm.mlir.global internal constant @[[TABLE:.*]]("h.9\00\00h.10\00")
// CHECK-LABEL: func @iterations
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:           %[[BASE:.*]] = llvm.mlir.addressof @[[TABLE]] : !llvm.ptr
// CHECK:           %[[W:.*]] = arith.constant 5 : index
// CHECK:           %[[OFF:.*]] = arith.muli %[[J]], %[[W]] : index
// CHECK:           %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK:           %[[NAME:.*]] = llvm.getelementptr %[[BASE]][%[[OFF64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:           call @dsrt_trace_begin(%[[NAME]], %{{.*}})
// CHECK-NEXT:      call @layer_Block(
// CHECK-NEXT:      call @dsrt_trace_end()
func.func @iterations(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %j = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<4xf32>) {
    %y = dsnn.layer "h.9" ("Block") -> tensor<4xf32> attributes {dsnn.iteration_names = ["h.9", "h.10"]} {
      %e = dsnn.exp %h : tensor<4xf32>
      dsnn.yield %e : tensor<4xf32>
    }
    scf.yield %y : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
