// RUN: ds-opt %s --ds-split-entry-blocks --split-input-file | FileCheck %s

// The body moves to a second block; the entry block only branches to it.
// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[A:.*]]: memref<4xf32>)
// CHECK-NEXT:    cf.br ^[[BODY:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    call @kernel_0(%[[A]])
// CHECK-NEXT:    return
func.func private @kernel_0(memref<4xf32>)
func.func @step(%a: memref<4xf32>) {
  call @kernel_0(%a) : (memref<4xf32>) -> ()
  return
}

// -----

// Without arguments there is nothing to convert at the top: unchanged.
// CHECK-LABEL: func.func @no_arguments(
// CHECK-NEXT:    return
// CHECK-NOT:   cf.br
func.func @no_arguments() {
  return
}
