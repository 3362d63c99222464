// RUN: ds-opt %s --ds-autodiff --split-input-file | FileCheck %s

// One model per dsnn op: the loss is a sum (or the op itself), so the VJP
// of each op reads the seed cotangent DY. Fused grad ops where they exist,
// primitive dsnn ops elsewhere.

// linear: dx = dy·W, dW = dyᵀ·x, db = Σ dy, on [M, n] matrices; x is a batch input, so dx is never built.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      -> (tensor<f32>, tensor<4x8xf32>, tensor<4xf32>)
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DY2:.*]] = dsnn.reshape %[[DY]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:    %[[X2:.*]] = dsnn.reshape %arg2 : tensor<2x3x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[DW:.*]] = dsnn.matmul %[[DY2]], %[[X2]] {transpose_a} : tensor<6x4xf32>, tensor<6x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.reduce_sum %[[DY2]] dims [0] : tensor<6x4xf32> -> tensor<4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DW]], %[[DB]]
func.func @forward(%w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = 0.02>}, %b: tensor<4xf32> {dsnn.param = #dsnn.param<name = "b", init = zeros>}, %x: tensor<2x3x8xf32>) -> tensor<f32> {
  %y = dsnn.linear %x, %w, %b : (tensor<2x3x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul: dA = dC·Bᵀ, dB = Aᵀ·dC through the transpose flags.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
// CHECK-NEXT:    %[[DA:.*]] = dsnn.matmul %[[DY]], %arg1 {transpose_b} : tensor<4x6xf32>, tensor<8x6xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.matmul %arg0, %[[DY]] {transpose_a} : tensor<4x8xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward(%a: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<8x6xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.matmul %a, %b : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<4x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// matmul with both operands transposed: C = Aᵀ·Bᵀ gives dA = Bᵀ·dCᵀ, dB = dCᵀ·Aᵀ.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
// CHECK-NEXT:    dsnn.matmul %arg1, %[[DY]] {transpose_a, transpose_b} : tensor<6x8xf32>, tensor<4x6xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    dsnn.matmul %[[DY]], %arg0 {transpose_a, transpose_b} : tensor<4x6xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
func.func @forward(%a: tensor<8x4xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<6x8xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.matmul %a, %b {transpose_a, transpose_b} : tensor<8x4xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<4x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// batch_matmul (Q·Kᵀ form).
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x4x6xf32>, tensor<f32> -> tensor<2x4x6xf32>
// CHECK-NEXT:    dsnn.batch_matmul %[[DY]], %arg1 : tensor<2x4x6xf32>, tensor<2x6x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT:    dsnn.batch_matmul %[[DY]], %arg0 {transpose_a} : tensor<2x4x6xf32>, tensor<2x4x8xf32> -> tensor<2x6x8xf32>
func.func @forward(%a: tensor<2x4x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<2x6x8xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.batch_matmul %a, %b {transpose_b} : tensor<2x4x8xf32>, tensor<2x6x8xf32> -> tensor<2x4x6xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x4x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// embedding: scatter-add into the table; the ids get no cotangent.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<f32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DT:.*]] = dsnn.embedding_grad %arg1, %[[DY]] : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<10x4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DT]]
func.func @forward(%t: tensor<10x4xf32> {dsnn.param = #dsnn.param<name = "t", init = normal, std = 0.02>}, %ids: tensor<2x3xi64>) -> tensor<f32> {
  %y = dsnn.embedding %ids, %t : tensor<2x3xi64>, tensor<10x4xf32> -> tensor<2x3x4xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// layer_norm: one fused op for dx, dweight, dbias.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %{{.*}}, %[[DW:.*]], %[[DB:.*]] = dsnn.layer_norm_grad %arg2, %arg0, %[[DY]] eps 1.000000e-05
// CHECK-NEXT:    return %{{.*}}, %[[DW]], %[[DB]]
func.func @forward(%g: tensor<8xf32> {dsnn.param = #dsnn.param<name = "g", init = ones>}, %b: tensor<8xf32> {dsnn.param = #dsnn.param<name = "b", init = zeros>}, %x: tensor<2x8xf32>) -> tensor<f32> {
  %y = dsnn.layer_norm %x, %g, %b eps 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// rms_norm.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %{{.*}}, %[[DW:.*]] = dsnn.rms_norm_grad %arg1, %arg0, %[[DY]] eps 1.000000e-05
// CHECK-NEXT:    return %{{.*}}, %[[DW]]
func.func @forward(%g: tensor<8xf32> {dsnn.param = #dsnn.param<name = "g", init = ones>}, %x: tensor<2x8xf32>) -> tensor<f32> {
  %y = dsnn.rms_norm %x, %g eps 1.0e-05 : tensor<2x8xf32>, tensor<8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// gelu: fused grad from the forward input.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.gelu_grad %arg0, %[[DY]] approximate tanh : tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.gelu %x approximate tanh : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// relu: fused grad from the forward input.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.relu_grad %arg0, %[[DY]] : tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.relu %x : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// silu: fused grad from the forward input.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.silu_grad %arg0, %[[DY]] : tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.silu %x : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// tanh from its output: dx = dy·(1 − y²).
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[Y:.*]] = dsnn.tanh %arg0
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[Y2:.*]] = dsnn.mul %[[Y]], %[[Y]]
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[D:.*]] = dsnn.sub %[[ONE]], %[[Y2]] : tensor<f32>, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.mul %[[DY]], %[[D]]
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.tanh %x : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// exp from its output: dx = dy·y.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[Y:.*]] = dsnn.exp %arg0
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.mul %[[DY]], %[[Y]]
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.exp %x : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// neg.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.neg %[[DY]]
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.neg %x : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// softmax: fused grad from the forward output.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[Y:.*]] = dsnn.softmax %arg0
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.softmax_grad %[[Y]], %[[DY]] dim -1
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.softmax %x dim -1 : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// log_softmax: fused grad from the forward output.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[Y:.*]] = dsnn.log_softmax %arg0
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.log_softmax_grad %[[Y]], %[[DY]] dim -1
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.log_softmax %x dim -1 : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// attention: one fused op keeps causal and scale.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x4x8x4xf32>, tensor<f32> -> tensor<2x4x8x4xf32>
// CHECK-NEXT:    %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = dsnn.attention_grad %arg0, %arg1, %arg2, %[[DY]] {causal, scale = 5.000000e-01 : f64}
// CHECK-NEXT:    return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]]
func.func @forward(%q: tensor<2x4x8x4xf32> {dsnn.param = #dsnn.param<name = "q", init = normal, std = 0.02>}, %k: tensor<2x4x8x4xf32> {dsnn.param = #dsnn.param<name = "k", init = normal, std = 0.02>}, %v: tensor<2x4x8x4xf32> {dsnn.param = #dsnn.param<name = "v", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.attention %q, %k, %v {causal, scale = 0.5 : f64} : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2, 3] : tensor<2x4x8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// dropout with p = 0 is the identity.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DY]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.dropout %x p 0.0 : tensor<2x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// add broadcasting [3, 1] over [2, 3, 8]: the cotangent is summed over the broadcast dims and reshaped back.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DBF:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x8xf32>, tensor<f32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[R:.*]] = dsnn.reduce_sum %[[DBF]] dims [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.reshape %[[R]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DBF]], %[[DB]]
func.func @forward(%a: tensor<2x3x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<3x1xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.add %a, %b : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// sub: the rhs gets −dy, unbroadcast.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x8xf32>, tensor<f32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[DBF:.*]] = dsnn.neg %[[DY]]
// CHECK-NEXT:    %[[R:.*]] = dsnn.reduce_sum %[[DBF]] dims [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.reshape %[[R]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DY]], %[[DB]]
func.func @forward(%a: tensor<2x3x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<3x1xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.sub %a, %b : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mul: da = dy·b, db = Σ dy·a.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x8xf32>, tensor<f32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[DA:.*]] = dsnn.mul %[[DY]], %arg1 : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[DBF:.*]] = dsnn.mul %[[DY]], %arg0
// CHECK-NEXT:    %[[R:.*]] = dsnn.reduce_sum %[[DBF]] dims [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.reshape %[[R]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward(%a: tensor<2x3x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<3x1xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.mul %a, %b : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// div: da = dy / b, db = Σ −(dy / b)·y.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[Y:.*]] = dsnn.div %arg0, %arg1
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x3x8xf32>, tensor<f32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[DA:.*]] = dsnn.div %[[DY]], %arg1 : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
// CHECK-NEXT:    %[[P:.*]] = dsnn.mul %[[DA]], %[[Y]]
// CHECK-NEXT:    %[[DBF:.*]] = dsnn.neg %[[P]]
// CHECK-NEXT:    %[[R:.*]] = dsnn.reduce_sum %[[DBF]] dims [0, 2] : tensor<2x3x8xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[DB:.*]] = dsnn.reshape %[[R]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DA]], %[[DB]]
func.func @forward(%a: tensor<2x3x8xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<3x1xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.div %a, %b : tensor<2x3x8xf32>, tensor<3x1xf32> -> tensor<2x3x8xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<2x3x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reshape inverts itself.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<f32> -> tensor<4x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.reshape %[[DY]] : tensor<4x4xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.reshape %x : tensor<2x8xf32> -> tensor<4x4xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// transpose by the inverse permutation.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<3x4x2xf32>, tensor<f32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.transpose %[[DY]] perm [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x3x4xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.transpose %x perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %l = dsnn.reduce_sum %y dims [0, 1, 2] : tensor<3x4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// split: the pieces' cotangents are concatenated; an unused piece contributes zeros.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.concat %[[Z]], %[[DY]] dim 1 : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x6xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %a, %b = dsnn.split %x dim 1 : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  %l = dsnn.reduce_sum %b dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// concat splits its cotangent.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x6xf32>, tensor<f32> -> tensor<2x6xf32>
// CHECK-NEXT:    %[[D:.*]]:2 = dsnn.split %[[DY]] dim 1 : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[D]]#0, %[[D]]#1
func.func @forward(%a: tensor<2x2xf32> {dsnn.param = #dsnn.param<name = "a", init = normal, std = 0.02>}, %b: tensor<2x4xf32> {dsnn.param = #dsnn.param<name = "b", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.concat %a, %b dim 1 : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x6xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// cast casts the cotangent back.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[D:.*]] = dsnn.cast %[[DY]] : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.cast %[[D]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.cast %x : tensor<2x8xf32> -> tensor<2x8xbf16>
  %z = dsnn.cast %y : tensor<2x8xbf16> -> tensor<2x8xf32>
  %l = dsnn.reduce_sum %z dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// grad_scale: the loss passes through, the backward starts from the scale
// (a constant of the step: no cotangent of its own).
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      %[[S:[^:]*]]: tensor<f32>)
// CHECK:         %[[L:.*]] = dsnn.reduce_sum
// CHECK-NEXT:    %[[SL:.*]] = dsnn.grad_scale %[[L]] by %[[S]]
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[SEED:.*]] = dsnn.mul %[[ONE]], %[[S]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK:         dsnn.add %{{.*}}, %[[SEED]] : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK:         return %[[SL]],
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}, %s: tensor<f32>) -> tensor<f32> {
  %l = dsnn.reduce_sum %x dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  %sl = dsnn.grad_scale %l by %s : tensor<f32>, tensor<f32>
  return %sl : tensor<f32>
}

// -----

// A layer's casts of values from outside it (mixed precision: parameters
// and inputs) are recomputed in the backward layer, not saved: the forward
// layer exports nothing here.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         dsnn.layer "fc"("Linear") -> tensor<2x4xbf16> {
// CHECK:         dsnn.layer "fc.backward"("Linear")
// CHECK-NEXT:      %[[X16:.*]] = dsnn.cast %arg1 : tensor<2x3xf32> -> tensor<2x3xbf16>
// CHECK-NEXT:      %[[DW:.*]] = dsnn.matmul %{{.*}}, %[[X16]] {transpose_a}
// CHECK-NEXT:      dsnn.cast %[[DW]] : tensor<4x3xbf16> -> tensor<4x3xf32>
func.func @forward(%w: tensor<4x3xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = 0.02>}, %x: tensor<2x3xf32>) -> tensor<f32> {
  %h = dsnn.layer "fc"("Linear") -> tensor<2x4xbf16> {
    %x16 = dsnn.cast %x : tensor<2x3xf32> -> tensor<2x3xbf16>
    %w16 = dsnn.cast %w : tensor<4x3xf32> -> tensor<4x3xbf16>
    %y = dsnn.linear %x16, %w16 : (tensor<2x3xbf16>, tensor<4x3xbf16>) -> tensor<2x4xbf16>
    dsnn.yield %y : tensor<2x4xbf16>
  }
  %h32 = dsnn.cast %h : tensor<2x4xbf16> -> tensor<2x4xf32>
  %l = dsnn.reduce_sum %h32 dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_sum over a middle dim: reshape to keep the dim as 1, then broadcast.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[K:.*]] = dsnn.reshape %[[DY]] : tensor<2x4xf32> -> tensor<2x1x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x3x4xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.add %[[Z]], %[[K]] : tensor<2x3x4xf32>, tensor<2x1x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x3x4xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %y = dsnn.reduce_sum %x dims [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %l = dsnn.reduce_sum %y dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// reduce_mean scales by 1/N (here 1/16) with a 0-d constant.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[INV:.*]] = arith.constant dense<6.250000e-02> : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = dsnn.mul %[[ONE]], %[[INV]] : tensor<f32>, tensor<f32> -> tensor<f32>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<2x8xf32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.add %[[Z]], %[[S]] : tensor<2x8xf32>, tensor<f32> -> tensor<2x8xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x8xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}) -> tensor<f32> {
  %l = dsnn.reduce_mean %x dims [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// cross_entropy: fused grad, keeps ignore_index; the targets get nothing.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DX:.*]] = dsnn.cross_entropy_grad %arg0, %arg1, %[[ONE]] {ignore_index = 0 : i64}
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x3x10xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}, %t: tensor<2x3xi64>) -> tensor<f32> {
  %l = dsnn.cross_entropy %x, %t {ignore_index = 0 : i64} : tensor<2x3x10xf32>, tensor<2x3xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// mse_loss: dx = dL·(2/N)·(x − t); the target is a batch input, so no dt.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = dsnn.mul %[[ONE]], %[[C]]
// CHECK-NEXT:    %[[D:.*]] = dsnn.sub %arg0, %arg1
// CHECK-NEXT:    %[[DX:.*]] = dsnn.mul %[[D]], %[[S]] : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NOT:     dsnn.neg
// CHECK-NEXT:    return %{{.*}}, %[[DX]]
func.func @forward(%x: tensor<2x4xf32> {dsnn.param = #dsnn.param<name = "x", init = normal, std = 0.02>}, %t: tensor<2x4xf32>) -> tensor<f32> {
  %l = dsnn.mse_loss %x, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A tied parameter (embedding and LM head) gets the sum of both uses' gradients; a parameter that does not reach the loss gets zeros.
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      -> (tensor<f32>, tensor<10x4xf32>, tensor<3xf32>)
// CHECK:         %[[DHEAD:.*]] = dsnn.matmul %{{.*}}, %{{.*}} {transpose_a} : tensor<6x10xf32>, tensor<6x4xf32> -> tensor<10x4xf32>
// CHECK:         %[[DEMB:.*]] = dsnn.embedding_grad %arg2, %{{.*}} : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<10x4xf32>
// CHECK-NEXT:    %[[DW:.*]] = dsnn.add %[[DHEAD]], %[[DEMB]]
// CHECK-NEXT:    %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    return %{{.*}}, %[[DW]], %[[Z]]
func.func @forward(%wte: tensor<10x4xf32> {dsnn.param = #dsnn.param<name = "wte.weight", init = normal, std = 0.02, tied = "wte">}, %unused: tensor<3xf32> {dsnn.param = #dsnn.param<name = "unused", init = zeros>}, %ids: tensor<2x3xi64>, %t: tensor<2x3xi64>) -> tensor<f32> {
  %e = dsnn.embedding %ids, %wte : tensor<2x3xi64>, tensor<10x4xf32> -> tensor<2x3x4xf32>
  %logits = dsnn.linear %e, %wte : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
  %l = dsnn.cross_entropy %logits, %t : tensor<2x3x10xf32>, tensor<2x3xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A layer's backward is a layer "<name>.backward" of the same type; the activations it reads (the gelu input) leave the forward layer as extra results; its results are the cotangents of what the forward layer reads from above.
// CHECK-LABEL: func.func @forward_backward(
// CHECK:         %[[H:.*]]:2 = dsnn.layer "h.0"("Block") -> tensor<2x4xf32>, tensor<2x4xf32> {
// CHECK-NEXT:      %[[Y:.*]] = dsnn.linear %arg1, %arg0
// CHECK-NEXT:      %[[A:.*]] = dsnn.gelu %[[Y]]
// CHECK-NEXT:      dsnn.yield %[[A]], %[[Y]] : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK:         %[[DY:.*]] = dsnn.add %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xf32>
// CHECK-NEXT:    %[[B:.*]] = dsnn.layer "h.0.backward"("Block") -> tensor<4x8xf32> attributes {backward} {
// CHECK-NEXT:      %[[DA:.*]] = dsnn.gelu_grad %[[H]]#1, %[[DY]]
// CHECK-NEXT:      %[[DW:.*]] = dsnn.matmul %[[DA]], %arg1 {transpose_a}
// CHECK-NEXT:      dsnn.yield %[[DW]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %{{.*}}, %[[B]]
func.func @forward(%w: tensor<4x8xf32> {dsnn.param = #dsnn.param<name = "w", init = normal, std = 0.02>}, %x: tensor<2x8xf32>) -> tensor<f32> {
  %h = dsnn.layer "h.0" ("Block") -> tensor<2x4xf32> {
    %y = dsnn.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
    %a = dsnn.gelu %y : tensor<2x4xf32>
    dsnn.yield %a : tensor<2x4xf32>
  }
  %l = dsnn.reduce_sum %h dims [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A declaration of the gradient function (a test harness or driver that
// calls it) is replaced by the definition; its callers keep working.
// CHECK-NOT:     func.func private @forward_backward
// CHECK-LABEL: func.func @forward_backward(
// CHECK-SAME:      -> (tensor<f32>, tensor<2xf32>)
// CHECK-NOT:     func.func private @forward_backward
// CHECK-LABEL: func.func @caller(
// CHECK:         call @forward_backward(
func.func @forward(%x: tensor<2xf32> {dsnn.param = #dsnn.param<name = "x", init = zeros>}) -> tensor<f32> {
  %l = dsnn.reduce_sum %x dims [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func private @forward_backward(tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>)
func.func @caller(%x: tensor<2xf32>) -> tensor<2xf32> {
  %l, %g = func.call @forward_backward(%x) : (tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>)
  return %g : tensor<2xf32>
}
