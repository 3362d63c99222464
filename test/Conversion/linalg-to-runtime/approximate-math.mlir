// RUN: ds-opt %s --ds-approximate-math | FileCheck %s
// RUN: ds-opt %s --ds-approximate-math='ops=exp' | FileCheck %s --check-prefix=ONLYEXP

// Every default op becomes arith; nothing is left to call libm.
// CHECK-LABEL: func @gelu_softmax_pieces
// CHECK-NOT:     math.erf
// CHECK-NOT:     math.exp
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.log
// CHECK:         return
// ONLYEXP-LABEL: func @gelu_softmax_pieces
// ONLYEXP:         math.erf
// ONLYEXP-NOT:     math.exp
// ONLYEXP:         math.tanh
// ONLYEXP:         math.log
func.func @gelu_softmax_pieces(%x: f32) -> (f32, f32, f32, f32) {
  %a = math.erf %x : f32
  %b = math.exp %x : f32
  %c = math.tanh %x : f32
  %d = math.log %b : f32
  return %a, %b, %c, %d : f32, f32, f32, f32
}
