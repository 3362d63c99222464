// REQUIRES: torch
// RUN: ds-opt %s --ds-lower-nn-to-linalg %lower-to-llvm | %mlir-runner > %t
// RUN: /usr/bin/python3 %S/Inputs/top2_logits.py %s < %t | FileCheck %s

// DeepSpeed's top2gating picks the second expert by the logits (the first
// masked), not by the probabilities: logits one or two ulps apart that round
// to the same f32 probability go to the greater logit, not the lower index.
// Subtracting the row max 2.0 (as softmax does) rounds 0.5 and 0.5 + 1 ulp
// (0x3F000000, 0x3F000001) to the same -1.5, so their probabilities tie
// exactly; 0x3F000003 and 0x3F000005 are two ulps apart and tie too.
// Token 1 is the control (greater logit at the lower index), token 4 an
// exact tie (lower index), token 2 has its first choice at expert 2, token 5
// at expert 1, token 6 has negative logits. The expected choices are torch's
// evaluation of top2gating's formulas on these logits (Inputs/top2_logits.py).
// TIED: 0 1 2
// TIED: 1 1 2
// TIED: 2 0 1
// TIED: 3 1 2
// TIED: 5 2 3
// TIED: 6 1 2

// CHECK: DeepSpeed top2gating choices (torch): {{\[}}[0, 2], [0, 1], [2, 1], [0, 2], [0, 1], [1, 3], [0, 2]]
// CHECK-COUNT-6: probabilities tie
// CHECK-NOT: DO NOT TIE
// CHECK: ds moe_route choices: {{.*}} ok

func.func @route(%logits: tensor<7x4xf32>) -> tensor<7x2xi64> {
  %probs = dsnn.softmax %logits dim 1 : tensor<7x4xf32>
  %e, %s, %load = dsnn.moe_route %probs {k = 2 : i64, capacity = 8 : i64}
      : tensor<7x4xf32> -> tensor<7x2xi64>, tensor<7x2xi64>, tensor<4xf32>
  return %e : tensor<7x2xi64>
}

func.func private @printMemrefI64(tensor<*xi64>)
func.func @main() {
  %logits = arith.constant dense<[[2.0, 0x3F000000, 0x3F000001, -1.0], [2.0, 0x3F000001, 0x3F000000, -1.0], [0x3F000000, 0x3F000001, 2.0, -1.0], [2.0, 0x3F000003, 0x3F000005, -1.0], [2.0, 0x3F000000, 0x3F000000, -1.0], [-1.0, 2.0, 0x3F000000, 0x3F000001], [2.0, 0xBF000001, 0xBF000000, -1.0]]> : tensor<7x4xf32>
  %e = func.call @route(%logits) : (tensor<7x4xf32>) -> tensor<7x2xi64>
  %ue = tensor.cast %e : tensor<7x2xi64> to tensor<*xi64>
  func.call @printMemrefI64(%ue) : (tensor<*xi64>) -> ()
  return
}
