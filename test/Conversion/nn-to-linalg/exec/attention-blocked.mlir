// Attention lowered by key blocks (online softmax, gradient from the
// logsumexp) equals the materialized lowering within 1e-6 of each result's
// largest magnitude in f32: causal and not, forward and gradient, with key
// lengths (11, 13) that are not multiples of the block (4), and logits
// scaled up (scale 4) so that later blocks raise the row max. bf16 runs the
// same blocks in f32 and rounds once, as the materialized form does.
// RUN: rm -rf %t && mkdir -p %t
// RUN: ds-run %s --entry f32 --random-inputs 3 --pre-pipeline 'ds-lower-nn-to-linalg{attention-block-size=0}' --outputs %t/m_%d.npy
// RUN: ds-run %s --entry f32 --random-inputs 3 --pre-pipeline 'ds-lower-nn-to-linalg{attention-block-size=4 attention-block-threshold=0}' --outputs %t/b_%d.npy
// RUN: %python %S/Inputs/npy_close.py 1e-6 %t/b_0.npy,%t/b_1.npy,%t/b_2.npy,%t/b_3.npy,%t/b_4.npy,%t/b_5.npy,%t/b_6.npy,%t/b_7.npy %t/m_0.npy,%t/m_1.npy,%t/m_2.npy,%t/m_3.npy,%t/m_4.npy,%t/m_5.npy,%t/m_6.npy,%t/m_7.npy | FileCheck %s
// CHECK-COUNT-8: within 1e-06 of max |x|

// A key length at the threshold keeps the materialized form, bit for bit.
// RUN: ds-run %s --entry f32 --random-inputs 3 --pre-pipeline 'ds-lower-nn-to-linalg{attention-block-size=4 attention-block-threshold=13}' --expect %t/m_0.npy,%t/m_1.npy,%t/m_2.npy,%t/m_3.npy,%t/m_4.npy,%t/m_5.npy,%t/m_6.npy,%t/m_7.npy --rtol 0 --atol 0

func.func @f32(%q: tensor<2x2x11x8xf32>, %k: tensor<2x2x11x8xf32>, %v: tensor<2x2x11x5xf32>, %do: tensor<2x2x11x5xf32>,
               %q7: tensor<3x7x8xf32>, %k13: tensor<3x13x8xf32>, %v13: tensor<3x13x6xf32>, %do7: tensor<3x7x6xf32>)
    -> (tensor<2x2x11x5xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x5xf32>,
        tensor<3x7x6xf32>, tensor<3x7x8xf32>, tensor<3x13x8xf32>, tensor<3x13x6xf32>) {
  %o = dsnn.attention %q, %k, %v {causal} : tensor<2x2x11x8xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x5xf32> -> tensor<2x2x11x5xf32>
  %dq, %dk, %dv = dsnn.attention_grad %q, %k, %v, %do {causal} : tensor<2x2x11x8xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x5xf32>, tensor<2x2x11x5xf32>
  %o7 = dsnn.attention %q7, %k13, %v13 {scale = 4.0 : f64} : tensor<3x7x8xf32>, tensor<3x13x8xf32>, tensor<3x13x6xf32> -> tensor<3x7x6xf32>
  %dq7, %dk13, %dv13 = dsnn.attention_grad %q7, %k13, %v13, %do7 {scale = 4.0 : f64} : tensor<3x7x8xf32>, tensor<3x13x8xf32>, tensor<3x13x6xf32>, tensor<3x7x6xf32>
  return %o, %dq, %dk, %dv, %o7, %dq7, %dk13, %dv13
    : tensor<2x2x11x5xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x8xf32>, tensor<2x2x11x5xf32>,
      tensor<3x7x6xf32>, tensor<3x7x8xf32>, tensor<3x13x8xf32>, tensor<3x13x6xf32>
}

// RUN: ds-run %s --entry bf16 --random-inputs 5 --pre-pipeline 'ds-lower-nn-to-linalg{attention-block-size=0}' --outputs %t/mb_%d.npy
// RUN: ds-run %s --entry bf16 --random-inputs 5 --pre-pipeline 'ds-lower-nn-to-linalg{attention-block-size=4 attention-block-threshold=0}' --outputs %t/bb_%d.npy
// RUN: %python %S/Inputs/npy_close.py 1e-2 %t/bb_0.npy,%t/bb_1.npy,%t/bb_2.npy,%t/bb_3.npy %t/mb_0.npy,%t/mb_1.npy,%t/mb_2.npy,%t/mb_3.npy | FileCheck %s --check-prefix=BF16
// BF16-COUNT-4: within 0.01 of max |x|
func.func @bf16(%q32: tensor<2x11x8xf32>, %k32: tensor<2x11x8xf32>, %v32: tensor<2x11x5xf32>, %do32: tensor<2x11x5xf32>)
    -> (tensor<2x11x5xf32>, tensor<2x11x8xf32>, tensor<2x11x8xf32>, tensor<2x11x5xf32>) {
  %q = dsnn.cast %q32 : tensor<2x11x8xf32> -> tensor<2x11x8xbf16>
  %k = dsnn.cast %k32 : tensor<2x11x8xf32> -> tensor<2x11x8xbf16>
  %v = dsnn.cast %v32 : tensor<2x11x5xf32> -> tensor<2x11x5xbf16>
  %do = dsnn.cast %do32 : tensor<2x11x5xf32> -> tensor<2x11x5xbf16>
  %o = dsnn.attention %q, %k, %v {causal} : tensor<2x11x8xbf16>, tensor<2x11x8xbf16>, tensor<2x11x5xbf16> -> tensor<2x11x5xbf16>
  %dq, %dk, %dv = dsnn.attention_grad %q, %k, %v, %do {causal} : tensor<2x11x8xbf16>, tensor<2x11x8xbf16>, tensor<2x11x5xbf16>, tensor<2x11x5xbf16>
  %o32 = dsnn.cast %o : tensor<2x11x5xbf16> -> tensor<2x11x5xf32>
  %dq32 = dsnn.cast %dq : tensor<2x11x8xbf16> -> tensor<2x11x8xf32>
  %dk32 = dsnn.cast %dk : tensor<2x11x8xbf16> -> tensor<2x11x8xf32>
  %dv32 = dsnn.cast %dv : tensor<2x11x5xbf16> -> tensor<2x11x5xf32>
  return %o32, %dq32, %dk32, %dv32 : tensor<2x11x5xf32>, tensor<2x11x8xf32>, tensor<2x11x8xf32>, tensor<2x11x5xf32>
}
